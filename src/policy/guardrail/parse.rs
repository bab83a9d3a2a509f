//! The strict shell parser: the subset of bash the guardrail models, and nothing else.
//!
//! Entry point: [`parse`]. It accepts a list of pipelines of simple commands:
//!
//! - words of literal characters, `'…'`, `"…"` (inside: literal text, `\` before `$` `` ` ``
//!   `"` `\` newline, and `$NAME` / `${NAME}`), backslash escapes, `\` newline continuations;
//! - `$NAME` / `${NAME}` outside quotes; `~` alone or as `~/…` at the start of a word or of an
//!   assignment value;
//! - operators `;` `&&` `||` `|` and newline; a newline may follow `&&` `||` `|`;
//! - redirections `<` `>` `>>` `>|` `&>` `&>>` with an optional file-descriptor number, and
//!   `N>&M` / `N<&M` / `N>&-`;
//! - comments exactly where bash starts them: a `#` at the start of a word;
//! - leading `NAME=value` assignments;
//! - unquoted `*` and `?` as [`Part::Glob`] (the guardrail expands them, or leaves).
//!
//! Everything else is refused with [`Unmodeled`] (construct and byte offset), so that "the
//! parser agrees with bash" only has to be argued for this small grammar: `$( )`, backticks,
//! `<( )`, `>( )`, `( )`, `{ }` and brace expansion, `[[ ]]`-style words, arithmetic, here-documents
//! and here-strings, `&` (background), `|&`, `;;`, bracket globs `[…]` (a word that is just `[`
//! is `test`), extglob, `!`, `~user`, a
//! `~` elsewhere, `$'…'`, `$"…"`, parameter operators (`${F%X}`), special and positional
//! parameters (`$1` `$@` `$$` `$?` …), `+=`, a word starting with `=` (zsh's `=cmd`), NUL and
//! control characters other than tab and newline, and anything unterminated. Keywords
//! (`if`, `for`, `function`, …) parse as ordinary words here; the guardrail leaves them because
//! no keyword is a modeled program.

/// Longest command text analysed (bytes); longer ones are left to the prompt.
pub(crate) const MAX_LEN: usize = 64 * 1024;

/// A construct outside the modeled subset, or an incomplete parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unmodeled {
    /// What was found, e.g. "command substitution `$(`".
    pub what: String,
    /// Byte offset in the command text.
    pub at: usize,
}

/// One piece of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Literal text (quotes and escapes removed).
    Lit(String),
    /// `$NAME` / `${NAME}`; `quoted` when inside double quotes (no splitting or globbing).
    Var { name: String, quoted: bool },
    /// A leading `~` (the home directory).
    Home,
    /// An unquoted `*` or `?` (pathname expansion).
    Glob(char),
}

/// One shell word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub parts: Vec<Part>,
    /// Byte offset of the word.
    pub at: usize,
}

/// A redirection operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirOp {
    /// `<`: reads the file.
    In,
    /// `>` or `>|`: creates/truncates the file.
    Out,
    /// `>>`: appends to the file.
    Append,
}

/// One redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Redir {
    /// A redirection to or from a file.
    File { op: RedirOp, target: Word },
    /// `N>&M`, `N<&M`, `N>&-`: duplicates or closes a descriptor; no file.
    Dup,
}

/// One simple command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Simple {
    /// Leading `NAME=value` assignments.
    pub assigns: Vec<(String, Word)>,
    /// The program word and its arguments.
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
    /// Byte offset of the command.
    pub at: usize,
    /// Byte offset just past its last word or redirection.
    pub end: usize,
}

/// How a pipeline is joined to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sep {
    /// The first pipeline, or after `;` / newline: always runs.
    Seq,
    /// After `&&`.
    And,
    /// After `||`.
    Or,
}

/// One pipeline of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pipeline {
    pub sep: Sep,
    pub cmds: Vec<Simple>,
}

/// A parsed command line: a list of pipelines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Script {
    pub pipelines: Vec<Pipeline>,
}

fn un(what: impl Into<String>, at: usize) -> Unmodeled {
    Unmodeled {
        what: what.into(),
        at,
    }
}

/// Characters that end an unquoted word (bash metacharacters).
fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

struct Lexer<'a> {
    src: &'a str,
    i: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.i..].chars().next()
    }
    fn peek2(&self) -> Option<char> {
        let mut it = self.src[self.i..].chars();
        it.next();
        it.next()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += c.len_utf8();
        Some(c)
    }
    fn rest(&self) -> &str {
        &self.src[self.i..]
    }

    /// Skips blanks and `\`-newline continuations (which bash removes before tokenising).
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ') | Some('\t') => {
                    self.i += 1;
                }
                Some('\\') if self.peek2() == Some('\n') => {
                    self.i += 2;
                }
                _ => return,
            }
        }
    }

    /// `$…` at `self.i` (the `$` not yet consumed).
    fn dollar(&mut self, quoted: bool) -> Result<Part, Unmodeled> {
        let at = self.i;
        self.i += 1;
        match self.peek() {
            Some('{') => {
                self.i += 1;
                let start = self.i;
                while self.peek().is_some_and(is_name_char) {
                    self.i += 1;
                }
                let name = &self.src[start..self.i];
                if self.peek() == Some('}') && name.chars().next().is_some_and(is_name_start) {
                    self.i += 1;
                    return Ok(Part::Var {
                        name: name.to_string(),
                        quoted,
                    });
                }
                let end = self.src[at..]
                    .find('}')
                    .map(|e| at + e + 1)
                    .unwrap_or(self.src.len());
                Err(un(
                    format!("unresolved expansion {}", &self.src[at..end]),
                    at,
                ))
            }
            Some(c) if is_name_start(c) => {
                let start = self.i;
                while self.peek().is_some_and(is_name_char) {
                    self.i += 1;
                }
                Ok(Part::Var {
                    name: self.src[start..self.i].to_string(),
                    quoted,
                })
            }
            Some('(') => Err(un(
                if self.peek2() == Some('(') {
                    "arithmetic expansion `$((`"
                } else {
                    "command substitution `$(`"
                },
                at,
            )),
            Some('\'') => Err(un("ANSI-C quoting `$'`", at)),
            Some('"') => Err(un("locale quoting `$\"`", at)),
            Some(c) => Err(un(format!("special parameter `${c}`"), at)),
            None => Err(un("lone `$`", at)),
        }
    }

    /// Reads one word at `self.i` (not at a metacharacter). `value` marks an assignment value
    /// (a leading `~` is expanded there too).
    fn word(&mut self) -> Result<Word, Unmodeled> {
        let at = self.i;
        let mut parts: Vec<Part> = Vec::new();
        let mut lit = String::new();
        let flush = |lit: &mut String, parts: &mut Vec<Part>| {
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(lit)));
            }
        };
        if self.peek() == Some('=') {
            return Err(un("word starting with `=`", at));
        }
        let mut first = true;
        while let Some(c) = self.peek() {
            if is_meta(c) {
                break;
            }
            let here = self.i;
            match c {
                '~' if first => {
                    self.i += 1;
                    match self.peek() {
                        None | Some('/') => parts.push(Part::Home),
                        Some(n) if is_meta(n) => parts.push(Part::Home),
                        _ => return Err(un("tilde prefix `~user`/`~+`/`~-`", here)),
                    }
                }
                '\'' => {
                    self.i += 1;
                    let Some(end) = self.rest().find('\'') else {
                        return Err(un("parse incomplete: unterminated `'`", here));
                    };
                    lit.push_str(&self.src[self.i..self.i + end]);
                    self.i += end + 1;
                }
                '"' => {
                    self.i += 1;
                    loop {
                        let Some(d) = self.peek() else {
                            return Err(un("parse incomplete: unterminated `\"`", here));
                        };
                        match d {
                            '"' => {
                                self.i += 1;
                                break;
                            }
                            '\\' => {
                                self.i += 1;
                                match self.peek() {
                                    Some('\n') => {
                                        self.i += 1;
                                    }
                                    Some(e @ ('$' | '`' | '"' | '\\')) => {
                                        self.i += 1;
                                        lit.push(e);
                                    }
                                    Some('!') => {
                                        return Err(un("`!` in double quotes", self.i));
                                    }
                                    Some(_) => lit.push('\\'),
                                    None => {
                                        return Err(un("parse incomplete: unterminated `\"`", here))
                                    }
                                }
                            }
                            '$' => {
                                flush(&mut lit, &mut parts);
                                let p = self.dollar(true)?;
                                parts.push(p);
                            }
                            '`' => return Err(un("command substitution with backticks", self.i)),
                            '!' => return Err(un("`!` (history expansion)", self.i)),
                            d => {
                                self.i += d.len_utf8();
                                lit.push(d);
                            }
                        }
                    }
                }
                '\\' => {
                    self.i += 1;
                    match self.bump() {
                        Some('\n') => {}
                        Some(e) => lit.push(e),
                        None => return Err(un("parse incomplete: trailing `\\`", here)),
                    }
                }
                '$' => {
                    flush(&mut lit, &mut parts);
                    let p = self.dollar(false)?;
                    parts.push(p);
                }
                '`' => return Err(un("command substitution with backticks", here)),
                // A word that is just `[` is `test`'s other name, not a bracket expression.
                '[' if first && self.src[here + 1..].chars().next().is_none_or(is_meta) => {
                    self.i += 1;
                    lit.push('[');
                }
                '*' | '?' => {
                    flush(&mut lit, &mut parts);
                    self.i += 1;
                    parts.push(Part::Glob(c));
                }
                '[' => return Err(un("glob `[`", here)),
                '{' | '}' => return Err(un(format!("brace `{c}`"), here)),
                '!' => return Err(un("`!` (history expansion or negation)", here)),
                '~' => return Err(un("`~` not at the start of a word", here)),
                c => {
                    self.i += c.len_utf8();
                    lit.push(c);
                }
            }
            first = false;
        }
        flush(&mut lit, &mut parts);
        Ok(Word { parts, at })
    }

    /// A leading `NAME=` of an assignment word, if the word at `self.i` is one.
    fn assignment_name(&self) -> Result<Option<String>, Unmodeled> {
        let r = self.rest();
        let mut n = 0;
        for (k, c) in r.char_indices() {
            if (k == 0 && is_name_start(c)) || (k > 0 && is_name_char(c)) {
                n = k + 1;
            } else {
                break;
            }
        }
        if n == 0 {
            return Ok(None);
        }
        match r[n..].chars().next() {
            Some('=') => Ok(Some(r[..n].to_string())),
            Some('+') if r[n + 1..].starts_with('=') => {
                Err(un("append assignment `+=`", self.i + n))
            }
            Some('[') => Err(un("array assignment", self.i + n)),
            _ => Ok(None),
        }
    }

    /// A redirection operator at `self.i`, with an optional fd number already consumed by the
    /// caller. Returns the parsed redirection (its target word read here).
    fn redirection(&mut self) -> Result<Redir, Unmodeled> {
        let at = self.i;
        let r = self.rest();
        let (op, len, dup_ok) = if r.starts_with("<<") {
            return Err(un("here-document or here-string `<<`", at));
        } else if r.starts_with("<(") || r.starts_with(">(") {
            return Err(un("process substitution", at));
        } else if r.starts_with("<>") {
            return Err(un("read-write redirection `<>`", at));
        } else if r.starts_with("&>>") {
            (RedirOp::Append, 3, false)
        } else if r.starts_with("&>") {
            (RedirOp::Out, 2, false)
        } else if r.starts_with(">>") {
            (RedirOp::Append, 2, false)
        } else if r.starts_with(">|") {
            (RedirOp::Out, 2, false)
        } else if r.starts_with(">&") || r.starts_with("<&") {
            self.i += 2;
            let start = self.i;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.i += 1;
            }
            if self.i == start && self.peek() == Some('-') {
                self.i += 1;
            }
            let ended = self.peek().is_none_or(is_meta);
            if self.i > start && ended {
                return Ok(Redir::Dup);
            }
            return Err(un("redirection `>&word`/`<&word` to a file", at));
        } else if r.starts_with('>') {
            (RedirOp::Out, 1, true)
        } else {
            (RedirOp::In, 1, true)
        };
        let _ = dup_ok;
        self.i += len;
        self.skip_blanks();
        match self.peek() {
            None | Some('\n') => Err(un("parse incomplete: redirection without a target", at)),
            Some(c) if is_meta(c) => Err(un("redirection without a word", at)),
            Some(_) => {
                if self.peek() == Some('#') {
                    // `> #x` is a redirection to a file named `#x`? No: `#` starts a comment
                    // only at a word start after a blank, so bash reports a syntax error.
                    return Err(un("redirection target starting with `#`", self.i));
                }
                let target = self.word()?;
                Ok(Redir::File { op, target })
            }
        }
    }
}

/// Parses `src` as the modeled bash subset. See the module doc for the grammar.
pub(crate) fn parse(src: &str) -> Result<Script, Unmodeled> {
    if src.len() > MAX_LEN {
        return Err(un("command longer than 64 KiB", MAX_LEN));
    }
    if let Some((at, c)) = src
        .char_indices()
        .find(|&(_, c)| c.is_control() && c != '\t' && c != '\n')
    {
        return Err(un(format!("control character U+{:04X}", c as u32), at));
    }
    let mut lx = Lexer { src, i: 0 };
    let mut script = Script::default();
    let mut cmds: Vec<Simple> = Vec::new();
    let mut cur = Simple::default();
    let mut started = false;
    let mut sep = Sep::Seq;
    // An operator that needs a command after it (`&&`, `||`, `|`), and where it was.
    let mut pending: Option<usize> = None;

    fn finish_simple(
        cur: &mut Simple,
        started: &mut bool,
        at: usize,
        what: &str,
    ) -> Result<Simple, Unmodeled> {
        if !*started {
            return Err(un(format!("syntax error: `{what}` without a command"), at));
        }
        *started = false;
        Ok(std::mem::take(cur))
    }

    loop {
        lx.skip_blanks();
        let at = lx.i;
        let Some(c) = lx.peek() else { break };
        match c {
            '#' => {
                // At a token start: a comment up to the newline (not consuming it).
                let end = lx.rest().find('\n').map(|e| lx.i + e).unwrap_or(src.len());
                lx.i = end;
            }
            '\n' | ';' => {
                if c == ';' && lx.peek2() == Some(';') {
                    return Err(un("`;;`", at));
                }
                lx.i += 1;
                if started {
                    cmds.push(finish_simple(&mut cur, &mut started, at, ";")?);
                    script.pipelines.push(Pipeline {
                        sep,
                        cmds: std::mem::take(&mut cmds),
                    });
                    sep = Sep::Seq;
                } else if pending.is_some() {
                    if c == ';' {
                        return Err(un("syntax error: `;` after an operator", at));
                    }
                    // newline after `&&`, `||`, `|`: continues the list.
                } else if c == ';' {
                    return Err(un("syntax error: `;` without a command", at));
                }
            }
            '&' if lx.peek2() == Some('&') => {
                lx.i += 2;
                cmds.push(finish_simple(&mut cur, &mut started, at, "&&")?);
                script.pipelines.push(Pipeline {
                    sep,
                    cmds: std::mem::take(&mut cmds),
                });
                sep = Sep::And;
                pending = Some(at);
            }
            '|' if lx.peek2() == Some('|') => {
                lx.i += 2;
                cmds.push(finish_simple(&mut cur, &mut started, at, "||")?);
                script.pipelines.push(Pipeline {
                    sep,
                    cmds: std::mem::take(&mut cmds),
                });
                sep = Sep::Or;
                pending = Some(at);
            }
            '|' => {
                if lx.peek2() == Some('&') {
                    return Err(un("`|&`", at));
                }
                lx.i += 1;
                cmds.push(finish_simple(&mut cur, &mut started, at, "|")?);
                pending = Some(at);
            }
            '&' if lx.peek2() == Some('>') => {
                let r = lx.redirection()?;
                mark_start(&mut cur, &mut started, &mut pending, at);
                cur.redirs.push(r);
                cur.end = lx.i;
            }
            '&' => return Err(un("background `&`", at)),
            '(' | ')' => return Err(un(format!("subshell or grouping `{c}`"), at)),
            '<' | '>' => {
                let r = lx.redirection()?;
                mark_start(&mut cur, &mut started, &mut pending, at);
                cur.redirs.push(r);
                cur.end = lx.i;
            }
            _ => {
                // An fd number directly before a redirection operator.
                let digits = lx.rest().bytes().take_while(u8::is_ascii_digit).count();
                if digits > 0 && matches!(lx.rest()[digits..].chars().next(), Some('<' | '>')) {
                    lx.i += digits;
                    let r = lx.redirection()?;
                    mark_start(&mut cur, &mut started, &mut pending, at);
                    cur.redirs.push(r);
                    cur.end = lx.i;
                    continue;
                }
                if cur.words.is_empty() {
                    if let Some(name) = lx.assignment_name()? {
                        lx.i += name.len() + 1;
                        let value = if lx.peek().is_none_or(is_meta) {
                            Word {
                                parts: Vec::new(),
                                at: lx.i,
                            }
                        } else {
                            lx.word()?
                        };
                        mark_start(&mut cur, &mut started, &mut pending, at);
                        cur.assigns.push((name, value));
                        cur.end = lx.i;
                        continue;
                    }
                }
                let w = lx.word()?;
                mark_start(&mut cur, &mut started, &mut pending, at);
                cur.words.push(w);
                cur.end = lx.i;
            }
        }
    }
    if let Some(at) = pending {
        if !started {
            return Err(un(
                "parse incomplete: operator without a following command",
                at,
            ));
        }
    }
    if started {
        cmds.push(std::mem::take(&mut cur));
        script.pipelines.push(Pipeline { sep, cmds });
    } else if !cmds.is_empty() {
        return Err(un(
            "parse incomplete: pipeline without a last command",
            src.len(),
        ));
    }
    Ok(script)
}

fn mark_start(cur: &mut Simple, started: &mut bool, pending: &mut Option<usize>, at: usize) {
    if !*started {
        cur.at = at;
        *started = true;
    }
    *pending = None;
}
