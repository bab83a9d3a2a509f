//! Bash commands in the modeled subset: simple commands, expansions, globs, redirections,
//! and the programs with their own path rules (`find`, `cp`/`mv`, `cd`, `git`).

use super::*;

impl<'a> Checker<'a> {
    /// Analyses one command text run from `start`.
    pub(super) fn command(&mut self, text: &str, start: &Cwd) -> Result<(), Hit> {
        self.cwds = vec![start.clone()];
        self.fail_cwds.clear();
        self.vars.clear();
        self.tainted.clear();
        self.wrote.clear();
        self.globbed.clear();
        self.ran_git.clear();
        let script =
            parse::parse(text).map_err(|u| self.hit(format!("{} at byte {}", u.what, u.at)))?;
        for pl in &script.pipelines {
            if pl.sep != Sep::And {
                // After `;`/newline or `||`, a failed `cd` of the chain before may be in effect.
                for c in std::mem::take(&mut self.fail_cwds) {
                    if !self.cwds.contains(&c) {
                        self.cwds.push(c);
                    }
                }
            }
            let in_pipeline = pl.cmds.len() > 1;
            let conditional = pl.sep != Sep::Seq;
            self.after_or = pl.sep == Sep::Or;
            for cmd in &pl.cmds {
                self.covered.push(text[cmd.at..cmd.end].to_string());
                self.simple_ix += 1;
                self.simple(cmd, in_pipeline, conditional)?;
            }
        }
        // Another simple command's write (before, or beside in a pipeline) is not in the
        // file system the check saw.
        let other = |a: &[usize], b: &[usize]| a.iter().any(|x| b.iter().any(|y| x != y));
        if other(&self.globbed, &self.wrote) {
            return Err(self.hit("glob in a command that also writes files"));
        }
        if other(&self.ran_git, &self.wrote) {
            return Err(self.hit("git in a command that also writes files"));
        }
        Ok(())
    }

    pub(super) fn expand(&self, w: &Word) -> Result<String, Hit> {
        let mut s = String::new();
        for p in &w.parts {
            match p {
                Part::Lit(l) => s.push_str(l),
                Part::Glob(c) => {
                    return Err(self.hit(format!(
                        "glob `{c}` where it is not modeled at byte {}",
                        w.at
                    )))
                }
                Part::Home => {
                    if self.home_str.is_empty() {
                        return Err(self.hit("home directory unknown"));
                    }
                    s.push_str(&self.home_str)
                }
                Part::Var { name, quoted } => {
                    let v = if name == "HOME" {
                        if self.home_str.is_empty() {
                            return Err(self.hit("home directory unknown"));
                        }
                        self.home_str.clone()
                    } else if let Some(v) = self.vars.get(name) {
                        v.clone()
                    } else {
                        return Err(self.hit(format!("unknown variable ${name} at byte {}", w.at)));
                    };
                    if !quoted && (v.is_empty() || v.contains([' ', '\t', '\n', '*', '?', '['])) {
                        return Err(self.hit(format!(
                            "unquoted ${name} would be split or globbed at byte {}",
                            w.at
                        )));
                    }
                    s.push_str(&v);
                }
            }
        }
        Ok(s)
    }

    pub(super) fn simple(
        &mut self,
        cmd: &Simple,
        in_pipeline: bool,
        conditional: bool,
    ) -> Result<(), Hit> {
        if cmd.words.is_empty() {
            for (name, value) in &cmd.assigns {
                if !name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                {
                    return Err(self.hit(format!(
                        "assignment to {name} (only lower-case shell variables are modeled)"
                    )));
                }
                if in_pipeline || conditional {
                    return Err(self.hit(format!(
                        "assignment to {name} in a pipeline or after && / ||"
                    )));
                }
                let v = self.expand(value)?;
                self.vars.insert(name.clone(), v);
            }
            return self.redirs(cmd);
        }
        if let Some((name, _)) = cmd.assigns.first() {
            return Err(self.hit(format!("environment assignment {name}=… for a program")));
        }
        let prog_name = self.expand(&cmd.words[0])?;
        let mut argv: Vec<String> = vec![prog_name.clone()];
        let mut first_glob: Option<usize> = None;
        for w in &cmd.words[1..] {
            if w.parts.iter().any(|p| matches!(p, Part::Glob(_))) {
                first_glob.get_or_insert(argv.len());
                self.globbed.push(self.simple_ix);
                argv.extend(self.glob(w)?);
            } else {
                argv.push(self.expand(w)?);
            }
        }
        let prog_name = prog_name.as_str();
        if prog_name.contains('/') {
            return Err(self.hit(format!("program given as a path \"{prog_name}\"")));
        }
        let Some(prog) = programs::program(prog_name) else {
            return Err(self.hit(format!(
                "unmodeled program \"{}\"",
                prog_name.chars().take(60).collect::<String>()
            )));
        };
        if !prog.builtin {
            if let Some(why) = self.path_env_verdict() {
                return Err(self.hit(why));
            }
        }
        self.redirs(cmd)?;
        let args = &argv[1..];
        let name = prog.name;
        if let Some(g) = first_glob {
            // The order of matches (locale collation) must not decide a destination or a
            // pattern: for grep/rg the pattern must come before the first glob.
            let fixed = match prog.kind {
                Kind::Grep | Kind::Rg => programs::parse_args(&argv[1..g], prog.opts, false)
                    .is_ok_and(|a| {
                        !a.operands.is_empty()
                            || a.values
                                .iter()
                                .any(|(v, _)| matches!(v, Val::Pattern | Val::PatternFile))
                    }),
                Kind::Cp | Kind::Mv | Kind::Cd | Kind::Date | Kind::Printf => false,
                _ => true,
            };
            if !fixed {
                return Err(self.hit(format!("glob in the arguments of {name}")));
            }
        }
        let parse = |opts, numeric| {
            programs::parse_args(args, opts, numeric)
                .map_err(|o| format!("option {o} of {name} is not modeled"))
        };
        match prog.kind {
            Kind::Echo => Ok(()),
            Kind::Text if prog.opts.is_empty() => Ok(()),
            Kind::Text => {
                parse(prog.opts, prog.numeric_opt).map_err(|e| self.hit(e))?;
                Ok(())
            }
            Kind::Printf => {
                if args
                    .first()
                    .is_some_and(|a| a.starts_with('-') && a != "--")
                {
                    return Err(self.hit("printf with an option"));
                }
                Ok(())
            }
            Kind::Date => {
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                if a.operands.iter().any(|o| !o.starts_with('+')) {
                    return Err(self.hit("date with an operand that sets the clock"));
                }
                Ok(())
            }
            Kind::List | Kind::Read | Kind::ReadOne => {
                let a = parse(prog.opts, prog.numeric_opt).map_err(|e| self.hit(e))?;
                self.values(&a)?;
                if prog.kind == Kind::ReadOne && a.operands.len() > 1 {
                    return Err(self.hit(format!("{name} with an output operand")));
                }
                let access = if prog.kind == Kind::List {
                    Access::List
                } else if matches!(name, "diff" | "cmp") {
                    // `diff DIR1 DIR2` reads the files in both directories.
                    Access::ReadTree
                } else {
                    Access::Read
                };
                for o in &a.operands {
                    if o != "-" {
                        self.path(o, access, true, name)?;
                    }
                }
                Ok(())
            }
            Kind::Grep | Kind::Rg => {
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                self.values(&a)?;
                let given = a
                    .values
                    .iter()
                    .any(|(v, _)| matches!(v, Val::Pattern | Val::PatternFile));
                let mut files: Vec<&String> = a.operands.iter().collect();
                if !given && !files.is_empty() {
                    files.remove(0);
                }
                let recursive = a.recursive || prog.kind == Kind::Rg;
                let dot = ".".to_string();
                if recursive && files.is_empty() {
                    files.push(&dot);
                }
                let access = if recursive {
                    Access::ReadTree
                } else {
                    Access::Read
                };
                for f in files {
                    if f != "-" {
                        self.path(f, access, true, name)?;
                    }
                }
                Ok(())
            }
            Kind::Find => self.find(args),
            Kind::SedPrint => {
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                if !args
                    .iter()
                    .any(|x| x == "-n" || x == "--quiet" || x == "--silent")
                {
                    return Err(self.hit("sed without -n"));
                }
                let Some((script, files)) = a.operands.split_first() else {
                    return Err(self.hit("sed without a script"));
                };
                if !sed_print_script(script) {
                    return Err(self.hit(format!("sed script {script:?} is not modeled")));
                }
                for f in files {
                    if f != "-" {
                        self.path(f, Access::Read, true, name)?;
                    }
                }
                Ok(())
            }
            Kind::Mkdir | Kind::Touch => {
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                if a.operands.is_empty() {
                    return Err(self.hit(format!("{name} without an operand")));
                }
                for o in &a.operands {
                    self.path(o, Access::Write, true, name)?;
                }
                Ok(())
            }
            Kind::Rm => {
                if in_pipeline {
                    return Err(self.hit("rm in a pipeline"));
                }
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                for o in &a.operands {
                    let access = if a.recursive {
                        Access::WriteTree
                    } else {
                        Access::Write
                    };
                    // `rm` removes a link, not its target; a removed path is strictly inside.
                    let rs = self.path(o, access, false, name)?;
                    for (comps, _) in &rs {
                        if !self
                            .roots
                            .write_roots
                            .iter()
                            .any(|r| starts_with(comps, r) && comps.len() > r.len())
                        {
                            return Err(self.hit(format!(
                                "rm {}: removes a project root",
                                self.display(comps)
                            )));
                        }
                    }
                }
                Ok(())
            }
            Kind::Cp | Kind::Mv => {
                if in_pipeline {
                    return Err(self.hit(format!("{name} in a pipeline")));
                }
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                self.copy_move(name, prog.kind == Kind::Mv, &a)
            }
            Kind::Cd => self.cd(args, in_pipeline),
            Kind::Git => self.git(args),
        }
    }

    /// Pathname expansion of one argument word, as bash does it with its default options: `*`
    /// and `?` in the last component only, hidden names never matched (a pattern starting
    /// with `.` is left), no match → the word itself. Matches that start with `-` are left
    /// (their order would decide option values).
    pub(super) fn glob(&mut self, w: &Word) -> Result<Vec<String>, Hit> {
        #[derive(Clone, Copy, PartialEq)]
        enum Pc {
            Lit(char),
            Star,
            One,
        }
        let mut pat: Vec<Pc> = Vec::new();
        for p in &w.parts {
            match p {
                Part::Glob('*') => pat.push(Pc::Star),
                Part::Glob(_) => pat.push(Pc::One),
                _ => {
                    let one = Word {
                        parts: vec![p.clone()],
                        at: w.at,
                    };
                    pat.extend(self.expand(&one)?.chars().map(Pc::Lit));
                }
            }
        }
        let text: String = pat
            .iter()
            .map(|c| match c {
                Pc::Lit(c) => *c,
                Pc::Star => '*',
                Pc::One => '?',
            })
            .collect();
        let slash = pat.iter().rposition(|c| *c == Pc::Lit('/'));
        let (dir_pat, last) = match slash {
            Some(k) => (&pat[..=k], &pat[k + 1..]),
            None => (&pat[..0], &pat[..]),
        };
        if dir_pat.iter().any(|c| !matches!(c, Pc::Lit(_))) || last.is_empty() {
            return Err(self.hit(format!("glob in a directory part: {text}")));
        }
        if last.first() == Some(&Pc::Lit('.')) {
            return Err(self.hit(format!("glob over hidden names: {text}")));
        }
        let dir: String = dir_pat
            .iter()
            .map(|c| if let Pc::Lit(c) = c { *c } else { '?' })
            .collect();
        if !dir.starts_with('/') && self.cwds.len() != 1 {
            return Err(self.hit(format!(
                "glob {text} with several possible working directories"
            )));
        }
        let read_at = if dir.starts_with('/') {
            dir.clone()
        } else {
            let mut b = join(&self.cwds[0].physical);
            b.push('/');
            b.push_str(&dir);
            b
        };
        fn matches(p: &[Pc], n: &[char]) -> bool {
            match (p.first(), n.first()) {
                (None, None) => true,
                (Some(Pc::Star), _) => {
                    matches(&p[1..], n) || (!n.is_empty() && matches(p, &n[1..]))
                }
                (Some(Pc::One), Some(_)) => matches(&p[1..], &n[1..]),
                (Some(Pc::Lit(a)), Some(b)) if a == b => matches(&p[1..], &n[1..]),
                _ => false,
            }
        }
        let mut out = Vec::new();
        if let Some(entries) = self.fs.read_dir(Path::new(&read_at)) {
            for (name, _) in entries {
                let Some(name) = name.to_str() else {
                    return Err(self.hit(format!("glob {text}: non-UTF-8 name")));
                };
                let chars: Vec<char> = name.chars().collect();
                if name.starts_with('.') || !matches(last, &chars) {
                    continue;
                }
                if out.len() >= 1000 {
                    return Err(self.hit(format!("glob {text}: more than 1000 matches")));
                }
                out.push(format!("{dir}{name}"));
            }
        }
        if out.is_empty() {
            out.push(text);
        }
        if out.iter().any(|m| m.starts_with('-')) {
            return Err(self.hit("glob match starting with `-`"));
        }
        out.sort();
        Ok(out)
    }

    /// Checks option values that are paths.
    pub(super) fn values(&mut self, a: &programs::Args) -> Result<(), Hit> {
        for (val, v) in &a.values {
            if *val == Val::PatternFile {
                self.path(v, Access::Read, true, "option value")?;
            }
        }
        Ok(())
    }

    pub(super) fn redirs(&mut self, cmd: &Simple) -> Result<(), Hit> {
        for r in &cmd.redirs {
            if let Redir::File { op, target } = r {
                let t = self.expand(target)?;
                // bash itself duplicates these descriptors; no file is opened.
                if matches!(t.as_str(), "/dev/stdout" | "/dev/stderr") && *op != RedirOp::In {
                    continue;
                }
                match op {
                    RedirOp::In => {
                        self.path(&t, Access::Read, true, "redirection")?;
                    }
                    RedirOp::Out | RedirOp::Append => {
                        self.path(&t, Access::Write, true, "redirection")?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether `PATH` lets a planted file stand for a modeled program.
    pub(super) fn path_env_verdict(&mut self) -> Option<String> {
        if let Some(v) = self.ctx.path_verdict.get().filter(|_| self.cache) {
            return v.clone();
        }
        let mut verdict = None;
        if let Some(path) = self.ctx.path_env.clone() {
            for entry in path.split(':') {
                if !entry.starts_with('/') {
                    verdict = Some(format!("PATH has a relative entry \"{entry}\""));
                    break;
                }
                let lexical = lexfold(&[], entry);
                let phys = self.resolve(&[], entry, true).map(|r| r.0).ok();
                let writable =
                    |c: &Vec<String>| self.roots.write_roots.iter().any(|r| starts_with(c, r));
                if writable(&lexical) || phys.as_ref().is_some_and(writable) {
                    verdict = Some(format!("PATH entry {entry} is inside the project"));
                    break;
                }
            }
        }
        if self.cache {
            let _ = self.ctx.path_verdict.set(verdict.clone());
        }
        verdict
    }

    pub(super) fn find(&mut self, args: &[String]) -> Result<(), Hit> {
        let mut i = 0;
        while i < args.len() && matches!(args[i].as_str(), "-H" | "-P") {
            i += 1;
        }
        let mut starts = Vec::new();
        while i < args.len() && !args[i].starts_with('-') && args[i] != "!" && args[i] != "(" {
            starts.push(args[i].clone());
            i += 1;
        }
        while i < args.len() {
            let a = args[i].as_str();
            i += 1;
            if programs::FIND_FLAGS.contains(&a) {
                continue;
            }
            if programs::FIND_TEXT.contains(&a) || programs::FIND_PATH.contains(&a) {
                let Some(v) = args.get(i) else {
                    return Err(self.hit(format!("find {a} without a value")));
                };
                i += 1;
                if programs::FIND_PATH.contains(&a) {
                    let v = v.clone();
                    self.path(&v, Access::List, true, "find")?;
                }
                continue;
            }
            return Err(self.hit(format!("find predicate {a} is not modeled")));
        }
        if starts.is_empty() {
            starts.push(".".into());
        }
        for s in &starts {
            self.path(s, Access::List, true, "find")?;
        }
        Ok(())
    }

    pub(super) fn copy_move(
        &mut self,
        name: &str,
        mv: bool,
        a: &programs::Args,
    ) -> Result<(), Hit> {
        let target_dir = a
            .values
            .iter()
            .find(|(v, _)| *v == Val::TargetDir)
            .map(|(_, d)| d.clone());
        let no_target_dir = false;
        let mut sources: Vec<String> = a.operands.clone();
        let dest = match &target_dir {
            Some(d) => d.clone(),
            None => {
                if sources.len() < 2 {
                    return Err(self.hit(format!("{name} needs a source and a destination")));
                }
                sources.pop().unwrap_or_default()
            }
        };
        if sources.is_empty() {
            return Err(self.hit(format!("{name} without a source")));
        }
        for s in &sources {
            if mv {
                let rs = self.path(s, Access::Write, false, name)?;
                for (comps, node) in rs {
                    if node == Node::Symlink {
                        return Err(self.hit(format!("mv of a symlink {}", self.display(&comps))));
                    }
                    if !self
                        .roots
                        .write_roots
                        .iter()
                        .any(|r| starts_with(&comps, r) && comps.len() > r.len())
                    {
                        return Err(
                            self.hit(format!("mv {}: moves a project root", self.display(&comps)))
                        );
                    }
                    if node == Node::Dir {
                        self.walk(&comps, true, name)?;
                    }
                }
            } else {
                self.path(s, Access::Read, true, name)?;
            }
        }
        let dests = self.path(&dest, Access::Write, true, name)?;
        let mut written = Vec::new();
        for (comps, node) in dests {
            let into_dir = target_dir.is_some() || (node == Node::Dir && !no_target_dir);
            if into_dir {
                for s in &sources {
                    let base = s.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                    if base.is_empty() || base == "." || base == ".." {
                        return Err(self.hit(format!("{name} source {s} has no name")));
                    }
                    let mut d = comps.clone();
                    d.push(base.to_string());
                    self.judge(&d, Node::Missing, Access::Write, name, false)?;
                    // The name inside the directory may itself be a symlink: resolve it.
                    let (phys, _) = self
                        .resolve(&comps, base, true)
                        .map_err(|e| self.hit(format!("{name}: {e}")))?;
                    self.judge(&phys, Node::Missing, Access::Write, name, false)?;
                    written.push(d);
                    written.push(phys);
                }
            } else {
                if sources.len() > 1 {
                    return Err(self.hit(format!("{name} of several sources to a non-directory")));
                }
                written.push(comps);
            }
        }
        self.tainted.extend(written);
        Ok(())
    }

    pub(super) fn cd(&mut self, args: &[String], in_pipeline: bool) -> Result<(), Hit> {
        if in_pipeline {
            return Err(self.hit("cd in a pipeline"));
        }
        let target = match args {
            [] => self.home_str.clone(),
            [t] => t.clone(),
            _ => return Err(self.hit("cd with several arguments")),
        };
        if target.is_empty() || target.starts_with(['-', '+']) {
            return Err(self.hit(format!("cd {target}")));
        }
        if self.ctx.cdpath.is_some()
            && !(target.starts_with('/')
                || target.starts_with("./")
                || target.starts_with("../")
                || target == "."
                || target == "..")
        {
            return Err(self.hit(format!("cd {target} with CDPATH set")));
        }
        let olds = self.cwds.clone();
        let mut news: Vec<Cwd> = Vec::new();
        for c in &olds {
            let logical = lexfold(&c.logical, &target);
            let candidates = [
                self.resolve(&[], &join(&logical), true),
                self.resolve(&c.physical, &target, true),
            ];
            for r in candidates {
                let (physical, _) = r.map_err(|e| self.hit(format!("cd {target}: {e}")))?;
                if self.tainted.iter().any(|t| starts_with(&physical, t)) {
                    return Err(self.hit(format!(
                        "cd {target}: created or replaced by cp/mv earlier in the command"
                    )));
                }
                let n = Cwd {
                    logical: logical.clone(),
                    physical,
                };
                if !news.contains(&n) {
                    news.push(n);
                }
            }
        }
        // After `||` the cd is skipped when the left side succeeded, and a following `&&`
        // runs in the old directory: it stays possible at once.
        if self.after_or {
            for o in &olds {
                if !news.contains(o) {
                    news.push(o.clone());
                }
            }
        }
        for o in olds {
            if !self.fail_cwds.contains(&o) {
                self.fail_cwds.push(o);
            }
        }
        if news.len() + self.fail_cwds.len() > MAX_CWDS {
            return Err(self.hit("too many possible working directories"));
        }
        self.cwds = news;
        Ok(())
    }

    pub(super) fn git(&mut self, args: &[String]) -> Result<(), Hit> {
        self.ran_git.push(self.simple_ix);
        if let Some(why) = &self.git_unknown {
            return Err(self.hit(format!("git: {why}")));
        }
        let mut i = 0;
        while i < args.len() && matches!(args[i].as_str(), "--no-pager" | "-P") {
            i += 1;
        }
        let Some(sub) = args.get(i) else {
            return Err(self.hit("git without a subcommand"));
        };
        if sub.starts_with('-') {
            return Err(self.hit(format!("git global option {sub} is not modeled")));
        }
        let Some(g) = programs::git_sub(sub) else {
            return Err(self.hit(format!("git subcommand \"{sub}\" is not modeled")));
        };
        let a = programs::parse_args(&args[i + 1..], g.opts, g.name == "log")
            .map_err(|o| self.hit(format!("option {o} of git {sub} is not modeled")))?;
        for o in &a.operands {
            if o.contains(':') {
                return Err(self.hit(format!("git operand {o} (object path)")));
            }
        }
        match g.operands {
            None if !a.operands.is_empty() => {
                return Err(self.hit(format!("git {sub} with an operand")));
            }
            Some(Kind::List) | Some(Kind::Read) => {
                let access = if g.operands == Some(Kind::List) {
                    Access::List
                } else {
                    Access::Read
                };
                // `git diff A B` with a path outside the working tree is `git diff --no-index`,
                // which reads both sides recursively (red-team R1); other subcommands reject
                // such a path, so every path operand must lie inside the worktree.
                let wt = self.roots.worktree.clone().unwrap_or_default();
                let wt_lexical = self.ctx_worktree_lexical();
                let inside = |p: &Vec<String>| starts_with(p, &wt) || starts_with(p, &wt_lexical);
                for o in &a.operands {
                    let lexical: Vec<Vec<String>> =
                        self.cwds.iter().map(|c| lexfold(&c.logical, o)).collect();
                    let phys = match lexical.iter().find(|p| !inside(p)) {
                        Some(p) => vec![(p.clone(), Node::Missing)],
                        None => self.path(o, access, true, "git")?,
                    };
                    if let Some((p, _)) = phys.iter().find(|(p, _)| !inside(p)) {
                        return Err(self.hit(format!(
                            "git {sub}: operand {o} is {}, outside the worktree (git reads it as --no-index)",
                            self.display(p)
                        )));
                    }
                }
            }
            _ => {}
        }
        // A diff or filter driver runs a program on contents git produces, and `.gitattributes`
        // (or any tracked file) decides what it is given (red-team R4).
        // `ls-files -m` refreshes the index like `status`: clean filters, fsmonitor.
        if matches!(
            g.name,
            "diff" | "log" | "show" | "blame" | "status" | "ls-files"
        ) {
            if let Some(d) = self.git_scan().drivers.first() {
                return Err(self.hit(format!(
                    "git {sub}: the git configuration runs a program on contents ({d})"
                )));
            }
        }
        self.git_repo_ok()
    }

    /// The worktree as given (lexical components).
    pub(super) fn ctx_worktree_lexical(&self) -> Vec<String> {
        self.ctx
            .worktree
            .to_str()
            .map(|w| lexfold(&[], w))
            .unwrap_or_default()
    }

    /// git runs only where it finds the project's own repository: the working directory is
    /// inside the worktree, the worktree has `.git`, and no directory between them holds a
    /// `.git` or a `HEAD` (a planted repository, bare or not, whose config git would obey).
    pub(super) fn git_repo_ok(&mut self) -> Result<(), Hit> {
        let Some(wt) = self.roots.worktree.clone() else {
            return Err(self.hit("git: worktree unknown"));
        };
        if !self.roots.write_roots.contains(&wt) {
            return Err(self.hit("git: the worktree is not a project directory"));
        }
        let mut dot_git = wt.clone();
        dot_git.push(".git".into());
        if !matches!(self.lstat(&join(&dot_git)), Node::Dir | Node::File) {
            return Err(self.hit("git: the worktree has no .git"));
        }
        if let Some(why) = self.git_scan().objection() {
            return Err(self.hit(format!(
                "git: configuration names a program in the project ({why})"
            )));
        }
        for c in self.cwds.clone() {
            if !starts_with(&c.physical, &wt) {
                return Err(self.hit("git: working directory outside the worktree"));
            }
            let mut d = c.physical.clone();
            while d.len() > wt.len() {
                for name in [".git", "HEAD"] {
                    let mut p = d.clone();
                    p.push(name.into());
                    if self.lstat(&join(&p)) != Node::Missing {
                        return Err(self.hit(format!(
                            "git: {} may be another repository",
                            self.display(&d)
                        )));
                    }
                }
                d.pop();
            }
        }
        Ok(())
    }
}

/// Whether the glob components `pat` (`**`: any number of components; `*`, `?` within one;
/// `[…]`, `{…}` widened to `*`) match the path components `path`.
pub(super) fn glob_comps(pat: &[&str], path: &[&str]) -> bool {
    match pat.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|i| glob_comps(rest, &path[i..])),
        Some((p, rest)) => {
            !path.is_empty()
                && glob_comp(widen(p).as_bytes(), path[0].as_bytes())
                && glob_comps(rest, &path[1..])
        }
    }
}

/// A glob component with each `[…]` or `{…}` group (and anything unterminated after `[`/`{`)
/// replaced by `*`: a wider match, never a narrower one.
pub(super) fn widen(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut close: Option<char> = None;
    for ch in p.chars() {
        match close {
            Some(c) if ch == c => close = None,
            Some(_) => {}
            None if ch == '[' || ch == '{' => {
                close = Some(if ch == '[' { ']' } else { '}' });
                out.push('*');
            }
            None => out.push(ch),
        }
    }
    out
}

/// `*` and `?` within one component (bytes; `?` may match part of a UTF-8 character, which
/// only widens the match).
pub(super) fn glob_comp(p: &[u8], n: &[u8]) -> bool {
    match p.split_first() {
        None => n.is_empty(),
        Some((b'*', rest)) => (0..=n.len()).any(|i| glob_comp(rest, &n[i..])),
        Some((b'?', rest)) => !n.is_empty() && glob_comp(rest, &n[1..]),
        Some((c, rest)) => n.first() == Some(c) && glob_comp(rest, &n[1..]),
    }
}

/// `Np`, `N,Mp`, `N,$p`, `$p` with decimal N and M: a sed script that only prints lines.
pub(super) fn sed_print_script(s: &str) -> bool {
    let Some(addr) = s.strip_suffix('p') else {
        return false;
    };
    let num = |x: &str| !x.is_empty() && x.len() <= 9 && x.bytes().all(|b| b.is_ascii_digit());
    match addr.split_once(',') {
        None => addr == "$" || num(addr),
        Some((a, b)) => num(a) && (b == "$" || num(b)),
    }
}
