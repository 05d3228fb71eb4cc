//! Query expansion with a small built-in thesaurus.
//!
//! Manuals are written in formal, written-style vocabulary (疾病, 解約,
//! 貸付, uninstall) while people ask in everyday words (病気, やめる, 借りる,
//! remove). Each entry maps an everyday form found in the (normalised)
//! query to formal forms; the formal forms become alternative spellings of
//! the same query concept, so a section using either form covers it.
//! The list is general-purpose vocabulary of contracts, terms and
//! procedures — not tied to one manual.

/// `(everyday form, formal alternatives)`, all in normal form.
pub(crate) const THESAURUS: &[(&str, &[&str])] = &[
    // Japanese: health and accidents
    ("病気", &["疾病"]),
    ("けが", &["傷害", "負傷"]),
    ("怪我", &["傷害", "負傷"]),
    ("持病", &["既往", "健康状態"]),
    ("亡くな", &["死亡"]),
    ("死んだ", &["死亡"]),
    // Japanese: money
    ("いくら", &["金額", "額"]),
    ("お金", &["金額", "返戻金"]),
    ("もらえ", &["支払", "給付", "受け取"]),
    ("受け取れ", &["支払", "受取"]),
    ("返ってく", &["返戻", "返還", "払い戻"]),
    ("戻ってく", &["返戻", "返還", "払い戻"]),
    ("振り込ま", &["支払"]),
    ("振込", &["支払"]),
    ("引き落とし", &["口座振替", "払込"]),
    ("払えます", &["払込"]),
    ("前払い", &["前納"]),
    ("先に払", &["前納"]),
    ("借り", &["貸付"]),
    ("払わなく", &["払込免除", "免除"]),
    // Japanese: time and counts
    ("何日", &["日数", "日以内"]),
    ("いつ", &["時期", "期間"]),
    ("1日あたり", &["日額"]),
    ("日あたり", &["日額"]),
    ("なくな", &["失効", "消滅"]),
    ("ケース", &["場合"]),
    ("されない", &["できない"]),
    ("かかってい", &["発病", "罹患"]),
    ("見つか", &["診断"]),
    ("何回", &["回数"]),
    ("いつから", &["開始"]),
    ("いつまで", &["期限", "満了"]),
    ("始ま", &["開始"]),
    ("期限", &["時効", "期間"]),
    ("遅れ", &["猶予", "延滞"]),
    ("長引", &["限度", "継続"]),
    // Japanese: actions on a contract
    ("加入", &["契約", "申込"]),
    ("入る", &["契約", "加入"]),
    ("やめ", &["解約"]),
    ("変えたい", &["変更"]),
    ("変え", &["変更"]),
    ("下げ", &["減額"]),
    ("減らし", &["減額"]),
    ("元に戻", &["復活"]),
    ("なくし", &["紛失"]),
    ("失くし", &["紛失"]),
    ("引っ越", &["住所", "転居"]),
    ("隠し", &["告げ", "告知"]),
    ("隠す", &["告げ", "告知"]),
    ("嘘", &["詐欺", "虚偽"]),
    ("だま", &["詐欺"]),
    ("間違", &["誤り"]),
    ("代わり", &["代理"]),
    ("家族", &["親族", "配偶者"]),
    ("裁判", &["訴訟", "裁判所"]),
    ("再発", &["2回目", "再度"]),
    ("日帰り", &["外来"]),
    ("出ない", &["支払わない", "支払いません"]),
    ("対象外", &["支払わない", "免責"]),
    ("書類", &["請求書", "診断書"]),
    ("手続き", &["手続", "請求"]),
    // English
    ("undo", &["rollback", "revert"]),
    ("go back", &["rollback"]),
    ("remove", &["uninstall", "delete"]),
    ("delete", &["uninstall", "remove"]),
    ("preview", &["dry-run", "plan"]),
    ("down", &["fail", "unavailable"]),
    ("password", &["secret", "credential"]),
    ("sign in", &["login"]),
    ("log in", &["login"]),
    ("signature", &["hmac"]),
    ("how long", &["retention", "timeout"]),
    ("cost", &["billed", "price"]),
];

/// Expansions for a normalised query: `(matched everyday form, formal forms)`.
/// A key inside a longer matched key (`いつ` in `いつから`) is skipped.
pub(crate) fn expansions(normalized: &str) -> Vec<(&'static str, &'static [&'static str])> {
    let matched: Vec<(&'static str, &'static [&'static str])> = THESAURUS
        .iter()
        .filter(|(key, _)| normalized.contains(key))
        .map(|(k, v)| (*k, *v))
        .collect();
    matched
        .iter()
        .filter(|(key, _)| {
            !matched.iter().any(|(other, _)| {
                other.len() > key.len() && other.contains(key) && covers_all(normalized, key, other)
            })
        })
        .copied()
        .collect()
}

/// Whether every occurrence of `key` in `text` lies inside an occurrence of `longer`.
fn covers_all(text: &str, key: &str, longer: &str) -> bool {
    let spans: Vec<(usize, usize)> = text
        .match_indices(longer)
        .map(|(i, m)| (i, i + m.len()))
        .collect();
    text.match_indices(key)
        .all(|(i, m)| spans.iter().any(|(a, b)| *a <= i && i + m.len() <= *b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_key_wins() {
        let keys: Vec<&str> = expansions("保障はいつから始まりますか")
            .iter()
            .map(|(k, _)| *k)
            .collect();
        assert!(keys.contains(&"いつから"));
        assert!(!keys.contains(&"いつ"));
        let keys: Vec<&str> = expansions("いつ払う、いつから")
            .iter()
            .map(|(k, _)| *k)
            .collect();
        assert!(keys.contains(&"いつ"));
    }
}
