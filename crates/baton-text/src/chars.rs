//! Character classes: which script a character belongs to, as far as
//! tokenisation cares.

/// The script class of a character, as far as tokenisation cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharClass {
    /// CJK ideographs (and 々 〆 〇 ヶ).
    Kanji,
    /// Hiragana.
    Hiragana,
    /// Katakana (with the prolonged sound mark) and Hangul.
    Katakana,
    /// Letters and digits of other scripts.
    Word,
    /// Separators and punctuation.
    Other,
}

/// The class of one character.
pub fn class(c: char) -> CharClass {
    match c {
        '々' | '〆' | '〇' | 'ヶ' => CharClass::Kanji,
        '\u{3041}'..='\u{309F}' => CharClass::Hiragana,
        '\u{30A0}'..='\u{30FA}' | '\u{30FC}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}' => {
            CharClass::Katakana
        }
        '\u{AC00}'..='\u{D7AF}' | '\u{1100}'..='\u{11FF}' => CharClass::Katakana,
        '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2FFFF}' => CharClass::Kanji,
        c if c.is_alphanumeric() => CharClass::Word,
        _ => CharClass::Other,
    }
}

/// Whether a class is Chinese, Japanese or Korean script.
pub fn is_cjk(class: CharClass) -> bool {
    matches!(
        class,
        CharClass::Kanji | CharClass::Hiragana | CharClass::Katakana
    )
}
