//! A conservative reading of a shell command line: which simple commands it
//! runs, with their words, assignments and redirections. Command
//! substitutions (`$(…)`, backticks, `<(…)`) are read too, and their
//! commands listed like the others. What this reader cannot see through
//! (a `case`, a function definition, a here-document that expands a
//! substitution, nesting deeper than [`MAX_DEPTH`]) is listed in
//! [`Script::opaque`]; the scope rules refuse such a line wherever they
//! need to know every command it runs.
//!
//! It reads POSIX shell and the bash forms agents use (`&&`, `||`, `|&`,
//! `&>`, `<<<`, `[[ … ]]`); it never runs anything.

/// How deep substitutions may nest before the reader gives up.
pub const MAX_DEPTH: usize = 8;

/// One word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text, quotes removed; expansions kept as written (`$HOME`).
    pub text: String,
    /// True when the shell computes part of it at run time (a variable, a
    /// substitution, a glob, a brace or tilde expansion).
    pub dynamic: bool,
}

/// One redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator without its file descriptor (`>`, `>>`, `<`, `<<<`,
    /// `>&`, `&>`, `<<`, …).
    pub op: String,
    /// Its target word (a file, a descriptor for `>&`, a here-document's
    /// delimiter).
    pub target: Word,
}

impl Redirect {
    /// Whether it may write a file: an output redirection that is not a
    /// descriptor duplication.
    pub fn writes(&self) -> bool {
        match self.op.as_str() {
            ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => true,
            ">&" => {
                !(self.target.text == "-" || self.target.text.chars().all(|c| c.is_ascii_digit()))
            }
            _ => false,
        }
    }
}

/// One simple command: `NAME=value … program args … redirections`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Leading `NAME=value` words.
    pub assignments: Vec<Word>,
    /// The program and its arguments.
    pub words: Vec<Word>,
    /// Its redirections.
    pub redirects: Vec<Redirect>,
    /// Started in the background (`&`).
    pub background: bool,
}

/// Everything a command line runs, as far as it can be seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// Every simple command, substitutions included, in reading order.
    pub commands: Vec<SimpleCommand>,
    /// What could not be seen through, described for a person.
    pub opaque: Vec<String>,
}

/// Reads `text` as a shell command line.
pub fn parse(text: &str) -> Script {
    let chars: Vec<char> = text.chars().collect();
    let mut reader = Reader {
        chars: &chars,
        pos: 0,
        script: Script::default(),
        depth: 0,
        pending_heredocs: Vec::new(),
    };
    reader.list(None);
    if reader.pos < chars.len() {
        reader
            .script
            .opaque
            .push("an unmatched closing parenthesis".into());
    }
    reader.script
}

struct Reader<'a> {
    chars: &'a [char],
    pos: usize,
    script: Script,
    depth: usize,
    /// Here-documents whose bodies start after the current line: the
    /// delimiter and whether the body expands (unquoted delimiter).
    pending_heredocs: Vec<(String, bool)>,
}

const KEYWORDS_SKIPPED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
];

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn opaque(&mut self, what: &str) {
        if !self.script.opaque.iter().any(|o| o == what) {
            self.script.opaque.push(what.to_string());
        }
    }

    /// Reads commands until `close` (unconsumed) or the end.
    fn list(&mut self, close: Option<char>) {
        let mut current = SimpleCommand::default();
        let mut skipping_for = false;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            if Some(c) == close {
                break;
            }
            match c {
                '#' => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    self.finish(&mut current);
                    skipping_for = false;
                    self.read_heredoc_bodies();
                }
                ';' | '|' => {
                    while matches!(self.peek(), Some(';' | '|' | '&')) {
                        self.pos += 1;
                    }
                    self.finish(&mut current);
                    skipping_for = false;
                }
                '&' if self.peek_at(1) == Some('>') => self.redirect(&mut current),
                '&' => {
                    if self.peek_at(1) == Some('&') {
                        self.pos += 2;
                    } else {
                        self.pos += 1;
                        current.background = true;
                    }
                    self.finish(&mut current);
                    skipping_for = false;
                }
                '(' => {
                    self.pos += 1;
                    if self.peek() == Some('(') {
                        // An arithmetic command `(( … ))`.
                        self.pos += 1;
                        let inner = self.until_matching_paren();
                        if inner.contains("$(") || inner.contains('`') {
                            self.opaque("a command substitution inside arithmetic");
                        }
                        continue;
                    }
                    if !current.words.is_empty() {
                        // `name() …`: a function definition.
                        self.opaque("a function definition");
                    }
                    self.finish(&mut current);
                    self.nested(Some(')'));
                    if self.peek() == Some(')') {
                        self.pos += 1;
                    }
                }
                ')' => {
                    // An unmatched `)` at this level: stop; the caller reports it.
                    break;
                }
                '<' | '>' => self.redirect(&mut current),
                _ => {
                    // A descriptor number right before a redirection (`2>`).
                    let start = self.pos;
                    let mut end = start;
                    while self.chars.get(end).is_some_and(|c| c.is_ascii_digit()) {
                        end += 1;
                    }
                    if end > start && matches!(self.chars.get(end), Some('<' | '>')) {
                        self.pos = end;
                        self.redirect(&mut current);
                        continue;
                    }
                    let word = self.word();
                    if skipping_for {
                        continue;
                    }
                    let first = current.words.is_empty() && current.assignments.is_empty();
                    if first && !word.dynamic && KEYWORDS_SKIPPED.contains(&word.text.as_str()) {
                        continue;
                    }
                    if first && !word.dynamic && matches!(word.text.as_str(), "for" | "select") {
                        skipping_for = true;
                        continue;
                    }
                    if first
                        && !word.dynamic
                        && matches!(word.text.as_str(), "case" | "function" | "coproc")
                    {
                        self.opaque(&format!("a `{}` construct", word.text));
                        continue;
                    }
                    if current.words.is_empty() && is_assignment(&word.text) {
                        current.assignments.push(word);
                    } else {
                        current.words.push(word);
                    }
                }
            }
        }
        self.finish(&mut current);
    }

    fn finish(&mut self, current: &mut SimpleCommand) {
        if !current.words.is_empty()
            || !current.assignments.is_empty()
            || !current.redirects.is_empty()
        {
            self.script.commands.push(std::mem::take(current));
        } else {
            *current = SimpleCommand::default();
        }
    }

    fn nested(&mut self, close: Option<char>) {
        if self.depth >= MAX_DEPTH {
            self.opaque("substitutions nested too deep");
            let _ = self.until_matching_paren();
            return;
        }
        self.depth += 1;
        self.list(close);
        self.depth -= 1;
    }

    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            if c == ' ' || c == '\t' || c == '\r' {
                self.pos += 1;
            } else if c == '\\' && self.peek_at(1) == Some('\n') {
                self.pos += 2;
            } else {
                break;
            }
        }
    }

    fn redirect(&mut self, current: &mut SimpleCommand) {
        let mut op = String::new();
        while let Some(c) = self.peek() {
            if matches!(c, '<' | '>' | '&' | '|' | '-') && op.len() < 3 {
                // `-` only in `<<-`; `|` only in `>|`; `&` only in `>&`, `&>`.
                let ok = match c {
                    '-' => op == "<<",
                    '|' => op == ">",
                    '&' => op.is_empty() || op == ">" || op == "<",
                    _ => true,
                };
                if !ok {
                    break;
                }
                op.push(c);
                self.pos += 1;
            } else {
                break;
            }
        }
        if op == "<" && self.peek() == Some('(') || op == ">" && self.peek() == Some('(') {
            // Process substitution as a word.
            self.pos += 1;
            self.nested(Some(')'));
            if self.peek() == Some(')') {
                self.pos += 1;
            }
            current.words.push(Word {
                text: format!("{op}(…)"),
                dynamic: true,
            });
            return;
        }
        self.skip_blanks();
        let raw_start = self.pos;
        let target = self.word();
        if op == "<<" || op == "<<-" {
            let raw: String = self.chars[raw_start..self.pos].iter().collect();
            let quoted = raw.contains(['\'', '"', '\\']);
            self.pending_heredocs.push((target.text.clone(), !quoted));
        }
        current.redirects.push(Redirect {
            op: op
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .to_string(),
            target,
        });
    }

    fn read_heredoc_bodies(&mut self) {
        let pending = std::mem::take(&mut self.pending_heredocs);
        for (delimiter, expands) in pending {
            let mut found = false;
            while self.pos < self.chars.len() {
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                if line.trim_start_matches('\t') == delimiter {
                    found = true;
                    break;
                }
                if expands && (line.contains("$(") || line.contains('`')) {
                    self.opaque("a here-document that runs a command substitution");
                }
            }
            if !found {
                self.opaque("a here-document without its end");
            }
        }
    }

    /// Characters up to the `)` matching an already consumed `(`, which is
    /// consumed too; quotes respected.
    fn until_matching_paren(&mut self) -> String {
        let start = self.pos;
        let mut depth = 1usize;
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.pos += 1,
                '\'' => {
                    self.pos += 1;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                }
                '"' => {
                    self.pos += 1;
                    while let Some(c) = self.peek() {
                        if c == '\\' {
                            self.pos += 1;
                        } else if c == '"' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner: String = self.chars[start..self.pos].iter().collect();
                        self.pos += 1;
                        return inner;
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        self.opaque("an unclosed parenthesis");
        self.chars[start..].iter().collect()
    }

    /// A `$…` expansion at the current position (the `$` not yet consumed):
    /// substitutions are read as commands.
    fn dollar(&mut self, text: &mut String) {
        self.pos += 1;
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                let inner = self.until_matching_paren();
                if self.peek() == Some(')') {
                    self.pos += 1;
                }
                if inner.contains("$(") || inner.contains('`') {
                    self.opaque("a command substitution inside arithmetic");
                }
                text.push_str("$((…))");
            }
            Some('(') => {
                self.pos += 1;
                self.nested(Some(')'));
                if self.peek() == Some(')') {
                    self.pos += 1;
                } else {
                    self.opaque("an unclosed command substitution");
                }
                text.push_str("$(…)");
            }
            Some('{') => {
                self.pos += 1;
                let start = self.pos;
                let mut depth = 1;
                while let Some(c) = self.peek() {
                    if c == '{' {
                        depth += 1;
                    } else if c == '}' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    self.pos += 1;
                }
                let inner: String = self.chars[start..self.pos].iter().collect();
                if self.peek() == Some('}') {
                    self.pos += 1;
                }
                if inner.contains("$(") || inner.contains('`') {
                    self.opaque("a command substitution inside a parameter expansion");
                }
                text.push_str(&format!("${{{inner}}}"));
            }
            Some('\'') => {
                // $'…': ANSI-C quoting, computed by the shell.
                self.pos += 1;
                text.push_str("$'");
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    if c == '\\' {
                        if let Some(n) = self.peek() {
                            text.push(c);
                            text.push(n);
                            self.pos += 1;
                        }
                        continue;
                    }
                    if c == '\'' {
                        break;
                    }
                    text.push(c);
                }
                text.push('\'');
            }
            _ => {
                text.push('$');
                while let Some(c) = self.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        text.push(c);
                        self.pos += 1;
                    } else {
                        if text.ends_with('$') && "@*#?-$!0123456789".contains(c) {
                            text.push(c);
                            self.pos += 1;
                        }
                        break;
                    }
                }
            }
        }
    }

    fn backtick(&mut self, text: &mut String) {
        self.pos += 1;
        let mut inner = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == '\\' {
                if let Some(n) = self.peek() {
                    self.pos += 1;
                    if !matches!(n, '`' | '\\' | '$') {
                        inner.push('\\');
                    }
                    inner.push(n);
                }
                continue;
            }
            if c == '`' {
                break;
            }
            inner.push(c);
        }
        if self.depth >= MAX_DEPTH {
            self.opaque("substitutions nested too deep");
        } else {
            let nested = parse(&inner);
            self.script.commands.extend(nested.commands);
            for o in nested.opaque {
                self.opaque(&o);
            }
        }
        text.push_str("`…`");
    }

    fn word(&mut self) -> Word {
        let mut text = String::new();
        let mut dynamic = false;
        let start = self.pos;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '|' | '&' | '(' | ')' | '<' | '>' => {
                    if (c == '<' || c == '>') && self.peek_at(1) == Some('(') && self.pos == start {
                        // Process substitution `<(…)` as a word.
                        self.pos += 2;
                        self.nested(Some(')'));
                        if self.peek() == Some(')') {
                            self.pos += 1;
                        }
                        text.push_str(&format!("{c}(…)"));
                        dynamic = true;
                        continue;
                    }
                    break;
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(n) => {
                            text.push(n);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    self.pos += 1;
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == '\'' {
                            break;
                        }
                        text.push(c);
                    }
                }
                '"' => {
                    self.pos += 1;
                    while let Some(c) = self.peek() {
                        match c {
                            '"' => {
                                self.pos += 1;
                                break;
                            }
                            '\\' => {
                                self.pos += 1;
                                if let Some(n) = self.peek() {
                                    if !matches!(n, '$' | '`' | '"' | '\\' | '\n') {
                                        text.push('\\');
                                    }
                                    if n != '\n' {
                                        text.push(n);
                                    }
                                    self.pos += 1;
                                }
                            }
                            '$' => {
                                dynamic = true;
                                self.dollar(&mut text);
                            }
                            '`' => {
                                dynamic = true;
                                self.backtick(&mut text);
                            }
                            other => {
                                text.push(other);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '$' => {
                    dynamic = true;
                    self.dollar(&mut text);
                }
                '`' => {
                    dynamic = true;
                    self.backtick(&mut text);
                }
                '*' | '?' | '[' => {
                    dynamic = true;
                    text.push(c);
                    self.pos += 1;
                }
                '{' if text.is_empty() && self.peek_at(1).is_none_or(|n| n == ' ') => {
                    text.push(c);
                    self.pos += 1;
                }
                '{' => {
                    dynamic = true;
                    text.push(c);
                    self.pos += 1;
                }
                '~' if self.pos == start => {
                    dynamic = true;
                    text.push(c);
                    self.pos += 1;
                }
                other => {
                    text.push(other);
                    self.pos += 1;
                }
            }
        }
        Word { text, dynamic }
    }
}

/// `NAME=value` (a shell variable assignment word).
pub fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(text: &str) -> Vec<String> {
        parse(text)
            .commands
            .iter()
            .map(|c| {
                c.words
                    .iter()
                    .map(|w| w.text.clone())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn lists_pipelines_and_quotes() {
        assert_eq!(
            programs("git add -A && git commit -m 'a b' ; echo \"x y\" | wc -l"),
            ["git add -A", "git commit -m a b", "echo x y", "wc -l"]
        );
        assert_eq!(programs("a\\ b c"), ["a b c"]);
        assert_eq!(programs("(cd src && ls) || true"), ["cd src", "ls", "true"]);
        assert_eq!(programs("ba''ton answer"), ["baton answer"]);
        assert_eq!(programs("\"ba\"ton answer"), ["baton answer"]);
    }

    #[test]
    fn substitutions_are_read_as_commands() {
        let s = parse("echo $(baton answer ws approve) `git commit -m x` <(cat a)");
        let all: Vec<String> = s
            .commands
            .iter()
            .map(|c| c.words.first().map(|w| w.text.clone()).unwrap_or_default())
            .collect();
        assert!(all.contains(&"baton".to_string()), "{all:?}");
        assert!(all.contains(&"git".to_string()), "{all:?}");
        assert!(all.contains(&"cat".to_string()), "{all:?}");
        assert!(s.opaque.is_empty(), "{:?}", s.opaque);
        let quoted = parse("echo \"$(baton answer)\"");
        assert!(quoted.commands.iter().any(|c| c.words[0].text == "baton"));
    }

    #[test]
    fn assignments_redirections_and_background() {
        let s = parse("A=1 B=$(x) cmd >out 2>&1 </dev/null &");
        let cmd = s
            .commands
            .iter()
            .find(|c| !c.words.is_empty() && c.words[0].text == "cmd")
            .unwrap();
        assert_eq!(cmd.assignments.len(), 2);
        assert!(cmd.background);
        let ops: Vec<(&str, &str, bool)> = cmd
            .redirects
            .iter()
            .map(|r| (r.op.as_str(), r.target.text.as_str(), r.writes()))
            .collect();
        assert_eq!(
            ops,
            [
                (">", "out", true),
                (">&", "1", false),
                ("<", "/dev/null", false)
            ]
        );
        assert!(
            s.commands
                .iter()
                .any(|c| c.words.first().is_some_and(|w| w.text == "x"))
        );
    }

    #[test]
    fn dynamic_words_are_marked() {
        let s = parse("ls $HOME *.rs ~/x {a,b} plain 'lit*'");
        let flags: Vec<bool> = s.commands[0].words.iter().map(|w| w.dynamic).collect();
        assert_eq!(flags, [false, true, true, true, true, false, false]);
    }

    #[test]
    fn what_cannot_be_seen_through_is_opaque() {
        assert!(!parse("case $x in a) baton answer;; esac").opaque.is_empty());
        assert!(!parse("f() { baton answer; }; f").opaque.is_empty());
        assert!(!parse("cat <<EOF\n$(baton answer)\nEOF").opaque.is_empty());
        assert!(parse("cat <<'EOF'\n$(not run)\nEOF\nls").opaque.is_empty());
        assert_eq!(programs("cat <<'EOF'\n$(not run)\nEOF\nls"), ["cat", "ls"]);
        let deep = "$(".repeat(20) + &")".repeat(20);
        assert!(!parse(&deep).opaque.is_empty());
    }

    #[test]
    fn keywords_and_loops() {
        assert_eq!(programs("for f in a b; do wc -l $f; done"), ["wc -l $f"]);
        assert_eq!(
            programs("if test -f x; then cat x; fi"),
            ["test -f x", "cat x"]
        );
        assert_eq!(programs("# comment\nls # trailing"), ["ls"]);
    }
}
