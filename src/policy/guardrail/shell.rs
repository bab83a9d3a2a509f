//! A small, tolerant parser for the part of POSIX/bash syntax the guardrail needs: words with
//! quoting and expansions, operators (`;` `&&` `||` `|` `&` newline), subshells and groups,
//! command and process substitution, redirections and here-documents.
//!
//! Why not a crate: `shlex` and `shell-words` split words but treat `>`, `;` and `|` as
//! ordinary characters (`echo x>.env` is one word to them), so redirections and command
//! boundaries would be invisible. `brush-parser`, the one maintained full bash parser, pulls in
//! bon, cached, insta, peg and tracing and needs rustc 1.88 (this crate targets 1.80) — too
//! much for a check that runs on every auto-approval. This parser never executes anything; it
//! is tolerant (unknown syntax such as `case` patterns degrades to words) and fails only where
//! bash itself would refuse to run the command: unterminated quotes or substitutions.

/// A glob `*` outside quotes.
pub(crate) const STAR: char = '\u{E000}';
/// A glob `?` or bracket class `[...]` outside quotes.
pub(crate) const ONE: char = '\u{E001}';
/// A value the analyser cannot know (unknown variable, command substitution).
pub(crate) const UNK: char = '\u{E002}';
/// Unquoted `{`, `,` and `}`, for brace expansion.
pub(crate) const BRACE_OPEN: char = '\u{E003}';
pub(crate) const BRACE_SEP: char = '\u{E004}';
pub(crate) const BRACE_CLOSE: char = '\u{E005}';

/// Maximum nesting of subshells, substitutions and `bash -c` strings before giving up.
pub(crate) const MAX_DEPTH: usize = 12;

#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// Unquoted literal text (globs and braces are live).
    Lit(String),
    /// Quoted or escaped literal text.
    Quoted(String),
    /// `$NAME`, `${NAME}`, `${NAME:-default}`.
    Var { name: String, default: Option<Word> },
    /// `$(...)`, backticks, `<(...)`, `>(...)`.
    Subst(Script),
    /// Something with no knowable value (`$1`, `$((...))`, `${#x}`).
    Unknown,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Word {
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirKind {
    /// Output to a file: `>`, `>>`, `>|`, `&>`, `&>>`, `N>`, `<>`, `>&file`.
    Out,
    /// Input from a file: `<`.
    In,
    /// Duplication (`2>&1`, `<&0`) or a here-string: no file.
    NoFile,
}

#[derive(Debug, Clone)]
pub(crate) struct Redir {
    pub kind: RedirKind,
    pub op: String,
    pub target: Word,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Simple {
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
    pub heredocs: Vec<String>,
    /// This command reads the previous one's output through `|`.
    pub piped: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    Simple(Simple),
    /// `( ... )`: changes of directory or variables do not leave it.
    Subshell(Script),
}

pub(crate) type Script = Vec<Node>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError(pub &'static str);

pub(crate) fn parse(src: &str) -> Result<Script, ParseError> {
    let mut p = Parser {
        s: src.chars().collect(),
        pos: 0,
        depth: 0,
        hd_newline: None,
        hd_resume: 0,
    };
    p.script(None)
}

struct Parser {
    s: Vec<char>,
    pos: usize,
    depth: usize,
    /// Position of the newline after which pending here-document bodies start, and where the
    /// lexer resumes once it reaches that newline.
    hd_newline: Option<usize>,
    hd_resume: usize,
}

fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
    )
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }
    fn at(&self, off: usize) -> Option<char> {
        self.s.get(self.pos + off).copied()
    }

    fn newline(&mut self) {
        // Called with `pos` on a '\n'.
        if self.hd_newline == Some(self.pos) {
            self.pos = self.hd_resume;
            self.hd_newline = None;
        } else {
            self.pos += 1;
        }
    }

    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            if c == ' ' || c == '\t' {
                self.pos += 1;
            } else if c == '\\' && self.at(1) == Some('\n') {
                self.pos += 2;
            } else {
                break;
            }
        }
    }

    fn script(&mut self, until: Option<char>) -> Result<Script, ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError("nesting too deep"));
        }
        let mut out = Script::new();
        let mut piped = false;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if until.is_some() {
                    return Err(ParseError("unterminated subshell or substitution"));
                }
                break;
            };
            if Some(c) == until {
                self.pos += 1;
                break;
            }
            match c {
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.newline();
                    piped = false;
                }
                ';' => {
                    self.pos += 1;
                    piped = false;
                }
                '&' if self.at(1) != Some('>') => {
                    self.pos += if self.at(1) == Some('&') { 2 } else { 1 };
                    piped = false;
                }
                '|' => {
                    if self.at(1) == Some('|') {
                        self.pos += 2;
                        piped = false;
                    } else {
                        self.pos += if self.at(1) == Some('&') { 2 } else { 1 };
                        piped = true;
                    }
                }
                '(' => {
                    self.pos += 1;
                    let inner = self.script(Some(')'))?;
                    out.push(Node::Subshell(inner));
                    piped = false;
                }
                ')' => self.pos += 1, // stray: a `case` pattern; tolerated
                _ => {
                    let mut simple = self.simple()?;
                    simple.piped = piped;
                    piped = false;
                    out.push(Node::Simple(simple));
                }
            }
        }
        self.depth -= 1;
        Ok(out)
    }

    fn simple(&mut self) -> Result<Simple, ParseError> {
        let mut s = Simple::default();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            match c {
                '\n' | ';' | '|' | ')' => break,
                '&' if self.at(1) != Some('>') => break,
                '(' => {
                    if self.at(1) == Some(')') {
                        self.pos += 2; // `name()` function definition
                        continue;
                    }
                    break;
                }
                '<' | '>' if self.at(1) == Some('(') => {
                    self.pos += 2;
                    let inner = self.script(Some(')'))?;
                    s.words.push(Word {
                        parts: vec![Part::Subst(inner)],
                    });
                }
                '<' | '>' | '&' => self.redirection(&mut s, None)?,
                d if d.is_ascii_digit() => {
                    let mut k = 0;
                    while self.at(k).is_some_and(|c| c.is_ascii_digit()) {
                        k += 1;
                    }
                    if matches!(self.at(k), Some('<' | '>')) {
                        let fd: String = self.s[self.pos..self.pos + k].iter().collect();
                        self.pos += k;
                        self.redirection(&mut s, Some(fd))?;
                    } else {
                        let w = self.word()?;
                        s.words.push(w);
                    }
                }
                _ => {
                    let w = self.word()?;
                    s.words.push(w);
                }
            }
        }
        Ok(s)
    }

    fn redirection(&mut self, s: &mut Simple, fd: Option<String>) -> Result<(), ParseError> {
        let start = self.pos;
        let c0 = self.peek().unwrap_or(' ');
        let c1 = self.at(1);
        let c2 = self.at(2);
        let (kind, len) = match (c0, c1, c2) {
            ('<', Some('<'), Some('<')) => (RedirKind::NoFile, 3),
            ('<', Some('<'), _) => {
                let strip = c2 == Some('-');
                self.pos += if strip { 3 } else { 2 };
                self.skip_blanks();
                let delim = self.word()?;
                let delim = literal_text(&delim);
                let body = self.heredoc_body(&delim, strip);
                s.heredocs.push(body);
                return Ok(());
            }
            ('<', Some('>'), _) => (RedirKind::Out, 2),
            ('<', Some('&'), _) => (RedirKind::NoFile, 2),
            ('<', _, _) => (RedirKind::In, 1),
            ('&', Some('>'), Some('>')) => (RedirKind::Out, 3),
            ('&', Some('>'), _) => (RedirKind::Out, 2),
            ('>', Some('>'), _) | ('>', Some('|'), _) => (RedirKind::Out, 2),
            ('>', Some('&'), _) => {
                // `>&2`, `>&-` duplicate; `>&file` writes the file (like `&>`).
                let mut k = 2;
                while self.at(k).is_some_and(|c| c.is_ascii_digit()) {
                    k += 1;
                }
                let dup = k > 2 || self.at(2) == Some('-');
                (
                    if dup {
                        RedirKind::NoFile
                    } else {
                        RedirKind::Out
                    },
                    2,
                )
            }
            ('>', _, _) => (RedirKind::Out, 1),
            _ => return Err(ParseError("bad redirection")),
        };
        self.pos += len;
        let op: String =
            fd.unwrap_or_default() + &self.s[start..start + len].iter().collect::<String>();
        self.skip_blanks();
        match self.peek() {
            Some(c) if !is_meta(c) || (c == '<' || c == '>') && self.at(1) == Some('(') => {}
            _ => return Err(ParseError("redirection without a target")),
        }
        let target = if self.peek().is_some_and(|c| c == '<' || c == '>') {
            self.pos += 2;
            Word {
                parts: vec![Part::Subst(self.script(Some(')'))?)],
            }
        } else {
            self.word()?
        };
        s.redirs.push(Redir { kind, op, target });
        Ok(())
    }

    /// Reads a here-document body that starts after the next newline (or after the previous
    /// here-document on the same line) and arranges for the lexer to skip it.
    fn heredoc_body(&mut self, delim: &str, strip_tabs: bool) -> String {
        let nl = match self.hd_newline {
            Some(nl) => nl,
            None => match self.s[self.pos..].iter().position(|&c| c == '\n') {
                Some(off) => self.pos + off,
                None => return String::new(),
            },
        };
        let mut i = if self.hd_newline.is_some() {
            self.hd_resume
        } else {
            nl + 1
        };
        let mut body = String::new();
        while i < self.s.len() {
            let end = self.s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(self.s.len(), |o| i + o);
            let line: String = self.s[i..end].iter().collect();
            let cmp = if strip_tabs {
                line.trim_start_matches('\t')
            } else {
                &line
            };
            i = (end + 1).min(self.s.len());
            if cmp == delim {
                break;
            }
            body.push_str(cmp);
            body.push('\n');
        }
        self.hd_newline = Some(nl);
        self.hd_resume = i;
        body
    }

    fn word(&mut self) -> Result<Word, ParseError> {
        let mut w = Word::default();
        let mut lit = String::new();
        macro_rules! flush {
            () => {
                if !lit.is_empty() {
                    w.parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
            };
        }
        while let Some(c) = self.peek() {
            if is_meta(c) {
                break;
            }
            match c {
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(e) => {
                            flush!();
                            w.parts.push(Part::Quoted(e.to_string()));
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    flush!();
                    self.pos += 1;
                    let start = self.pos;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    if self.peek().is_none() {
                        return Err(ParseError("unterminated single quote"));
                    }
                    w.parts
                        .push(Part::Quoted(self.s[start..self.pos].iter().collect()));
                    self.pos += 1;
                }
                '"' => {
                    flush!();
                    self.pos += 1;
                    self.double_quoted(&mut w)?;
                }
                '`' => {
                    flush!();
                    let inner = self.backtick()?;
                    w.parts.push(Part::Subst(inner));
                }
                '$' => {
                    flush!();
                    self.dollar(&mut w, false)?;
                }
                '*' => {
                    lit.push(STAR);
                    self.pos += 1;
                }
                '?' => {
                    lit.push(ONE);
                    self.pos += 1;
                }
                '[' => {
                    // A bracket class stands for one character; `[` alone is literal.
                    match self.s[self.pos + 1..]
                        .iter()
                        .position(|&c| c == ']' || is_meta(c))
                    {
                        Some(off) if self.s[self.pos + 1 + off] == ']' && off > 0 => {
                            lit.push(ONE);
                            self.pos += off + 2;
                        }
                        _ => {
                            lit.push('[');
                            self.pos += 1;
                        }
                    }
                }
                '{' => {
                    lit.push(BRACE_OPEN);
                    self.pos += 1;
                }
                ',' => {
                    lit.push(BRACE_SEP);
                    self.pos += 1;
                }
                '}' => {
                    lit.push(BRACE_CLOSE);
                    self.pos += 1;
                }
                _ => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        flush!();
        Ok(w)
    }

    fn double_quoted(&mut self, w: &mut Word) -> Result<(), ParseError> {
        let mut lit = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(ParseError("unterminated double quote"));
            };
            match c {
                '"' => {
                    self.pos += 1;
                    break;
                }
                '\\' => {
                    match self.at(1) {
                        Some('\n') => {}
                        Some(e @ ('$' | '`' | '"' | '\\')) => lit.push(e),
                        Some(e) => {
                            lit.push('\\');
                            lit.push(e);
                        }
                        None => return Err(ParseError("unterminated double quote")),
                    }
                    self.pos += 2;
                }
                '$' | '`' => {
                    if !lit.is_empty() {
                        w.parts.push(Part::Quoted(std::mem::take(&mut lit)));
                    }
                    if c == '$' {
                        self.dollar(w, true)?;
                    } else {
                        let inner = self.backtick()?;
                        w.parts.push(Part::Subst(inner));
                    }
                }
                _ => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        if !lit.is_empty() {
            w.parts.push(Part::Quoted(lit));
        }
        Ok(())
    }

    fn backtick(&mut self) -> Result<Script, ParseError> {
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => return Err(ParseError("unterminated backquote")),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') if matches!(self.at(1), Some('`' | '\\' | '$')) => {
                    inner.push(self.at(1).unwrap_or('\\'));
                    self.pos += 2;
                }
                Some(c) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        let mut sub = Parser {
            s: inner.chars().collect(),
            pos: 0,
            depth: self.depth,
            hd_newline: None,
            hd_resume: 0,
        };
        sub.script(None)
    }

    /// Called with `pos` on a `$`.
    fn dollar(&mut self, w: &mut Word, in_dq: bool) -> Result<(), ParseError> {
        match self.at(1) {
            Some('(') if self.at(2) == Some('(') => {
                // Arithmetic: skip to the matching `))`.
                self.pos += 3;
                let mut depth = 2usize;
                while depth > 0 {
                    match self.peek() {
                        None => return Err(ParseError("unterminated arithmetic")),
                        Some('(') => depth += 1,
                        Some(')') => depth -= 1,
                        _ => {}
                    }
                    self.pos += 1;
                }
                w.parts.push(Part::Unknown);
            }
            Some('(') => {
                self.pos += 2;
                let inner = self.script(Some(')'))?;
                w.parts.push(Part::Subst(inner));
            }
            Some('{') => {
                self.pos += 2;
                let start = self.pos;
                let mut depth = 1usize;
                while depth > 0 {
                    match self.peek() {
                        None => return Err(ParseError("unterminated ${")),
                        Some('{') => depth += 1,
                        Some('}') => depth -= 1,
                        Some('\\') => self.pos += 1,
                        _ => {}
                    }
                    self.pos += 1;
                }
                let inner: String = self.s[start..self.pos - 1].iter().collect();
                w.parts.push(self.braced_var(&inner)?);
            }
            Some('\'') if !in_dq => {
                self.pos += 2;
                let mut text = String::new();
                loop {
                    match self.peek() {
                        None => return Err(ParseError("unterminated $'")),
                        Some('\'') => {
                            self.pos += 1;
                            break;
                        }
                        Some('\\') => {
                            let e = self.at(1).ok_or(ParseError("unterminated $'"))?;
                            self.pos += 2;
                            match e {
                                'n' => text.push('\n'),
                                't' => text.push('\t'),
                                'r' => text.push('\r'),
                                'x' | 'u' | 'U' => {
                                    let max = match e {
                                        'x' => 2,
                                        'u' => 4,
                                        _ => 8,
                                    };
                                    let mut v = 0u32;
                                    let mut n = 0;
                                    while n < max {
                                        match self.peek().and_then(|c| c.to_digit(16)) {
                                            Some(d) => {
                                                v = v * 16 + d;
                                                self.pos += 1;
                                                n += 1;
                                            }
                                            None => break,
                                        }
                                    }
                                    text.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                                }
                                '0'..='7' => {
                                    let mut v = e.to_digit(8).unwrap_or(0);
                                    for _ in 0..2 {
                                        match self.peek().and_then(|c| c.to_digit(8)) {
                                            Some(d) => {
                                                v = v * 8 + d;
                                                self.pos += 1;
                                            }
                                            None => break,
                                        }
                                    }
                                    text.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                                }
                                other => text.push(other),
                            }
                        }
                        Some(c) => {
                            text.push(c);
                            self.pos += 1;
                        }
                    }
                }
                w.parts.push(Part::Quoted(text));
            }
            Some('"') if !in_dq => {
                self.pos += 2;
                self.double_quoted(w)?;
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
                let name: String = self.s[start..self.pos].iter().collect();
                w.parts.push(Part::Var {
                    name,
                    default: None,
                });
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.pos += 2;
                w.parts.push(Part::Unknown);
            }
            _ => {
                self.pos += 1;
                w.parts.push(Part::Quoted("$".into()));
            }
        }
        Ok(())
    }

    fn braced_var(&self, inner: &str) -> Result<Part, ParseError> {
        let name_len = inner
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let (name, rest) = inner.split_at(name_len);
        if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
            return Ok(Part::Unknown);
        }
        if rest.is_empty() {
            return Ok(Part::Var {
                name: name.into(),
                default: None,
            });
        }
        let dflt = rest
            .strip_prefix(":-")
            .or_else(|| rest.strip_prefix(":="))
            .or_else(|| rest.strip_prefix('-'))
            .or_else(|| rest.strip_prefix('='));
        match dflt {
            Some(d) => {
                let mut sub = Parser {
                    s: d.chars().collect(),
                    pos: 0,
                    depth: self.depth,
                    hd_newline: None,
                    hd_resume: 0,
                };
                let word = sub.word()?;
                Ok(Part::Var {
                    name: name.into(),
                    default: Some(word),
                })
            }
            None => Ok(Part::Unknown),
        }
    }
}

/// The text of a word with quotes removed and no expansion (for here-document delimiters).
fn literal_text(w: &Word) -> String {
    let mut s = String::new();
    for p in &w.parts {
        match p {
            Part::Lit(t) => s.extend(t.chars().map(unsentinel)),
            Part::Quoted(t) => s.push_str(t),
            Part::Var { name, .. } => {
                s.push('$');
                s.push_str(name);
            }
            Part::Subst(_) | Part::Unknown => {}
        }
    }
    s
}

/// Maps a sentinel back to the character it stands for (for display and leftovers).
pub(crate) fn unsentinel(c: char) -> char {
    match c {
        STAR => '*',
        ONE => '?',
        UNK => '…',
        BRACE_OPEN => '{',
        BRACE_SEP => ',',
        BRACE_CLOSE => '}',
        c => c,
    }
}

/// Brace expansion over sentinel-marked text: `a{b,c}d` → `abd`, `acd`. At most `cap` results;
/// unbalanced braces stay literal.
pub(crate) fn brace_expand(s: &str, cap: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let Some(open) = chars.iter().position(|&c| c == BRACE_OPEN) else {
        return vec![s.chars().map(unsentinel).collect()];
    };
    // Find the matching close and top-level separators.
    let mut depth = 0usize;
    let mut seps = Vec::new();
    let mut close = None;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match c {
            BRACE_OPEN => depth += 1,
            BRACE_CLOSE => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            BRACE_SEP if depth == 1 => seps.push(i),
            _ => {}
        }
    }
    let prefix: String = chars[..open].iter().map(|&c| unsentinel(c)).collect();
    let Some(close) = close.filter(|_| !seps.is_empty()) else {
        // Not an expansion: keep the brace literally and expand the rest.
        let rest: String = chars[open + 1..].iter().collect();
        return brace_expand(&rest, cap)
            .into_iter()
            .map(|r| format!("{prefix}{{{r}"))
            .collect();
    };
    let suffix: String = chars[close + 1..].iter().collect();
    let mut bounds = vec![open];
    bounds.extend(&seps);
    bounds.push(close);
    let mut out = Vec::new();
    'outer: for win in bounds.windows(2) {
        let alt: String = chars[win[0] + 1..win[1]].iter().collect();
        for tail in brace_expand(&format!("{alt}{suffix}"), cap) {
            out.push(format!("{prefix}{tail}"));
            if out.len() >= cap {
                break 'outer;
            }
        }
    }
    out
}
