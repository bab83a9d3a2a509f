//! Per-command handlers of the shell analyser: [`Checker::dispatch`] maps a simple command's
//! argv to the paths it reads or writes (through generic arguments, writers, copy-like
//! commands, `find`, `git`, package managers, interpreters, nested shells, and commands that
//! write protected files without naming them).

use super::*;

impl Checker<'_> {
    pub(super) fn dispatch(
        &mut self,
        argv: &[String],
        st: &mut ShState,
        cx: &CmdCtx<'_>,
    ) -> Option<Vec<String>> {
        if self.hit.is_some() || argv.is_empty() || cx.depth > MAX_DEPTH {
            return None;
        }
        let base = st.base();
        let prog = argv[0].rsplit('/').next().unwrap_or("").to_owned();
        let args = &argv[1..];
        if has_sentinel(&prog) {
            self.generic(
                args,
                &base,
                Access::Write,
                "a command whose name is computed at run time, argument",
            );
            return None;
        }
        let p = prog.as_str();
        let what = format!("`{p}`");
        // `npx c2c-bridge …`, `node bin/c2c-bridge.js …`: judge the c2c command itself.
        if matches!(p, "npx" | "pnpx" | "bunx" | "node" | "nodejs" | "bun") {
            if let Some(k) = args.iter().position(|a| !a.starts_with('-')) {
                let name = args[k].rsplit('/').next().unwrap_or("");
                let stem = [".js", ".cjs", ".mjs"]
                    .iter()
                    .find_map(|x| name.strip_suffix(x))
                    .unwrap_or(name);
                if stem == "c2c-bridge" || stem == "c2c" {
                    let mut v = vec!["c2c-bridge".to_string()];
                    v.extend_from_slice(&args[k + 1..]);
                    return self.dispatch(&v, st, cx);
                }
            }
        }
        match p {
            // Control keywords: look through them.
            "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "{" | "time"
            | "}" | "fi" | "done" | "esac" => {
                return self.dispatch(args, st, cx);
            }
            "for" | "case" | "select" | "function" | "in" | ";;" => {}
            // Listing, printing, testing: arguments are not read or written.
            "echo" | "printf" => {
                let words: Vec<String> = if p == "printf" {
                    args.iter().skip(1).cloned().collect()
                } else {
                    args.iter()
                        .filter(|a| !a.starts_with('-'))
                        .cloned()
                        .collect()
                };
                return Some(words);
            }
            "ls" | "ll" | "la" | "dir" | "tree" | "stat" | "file" | "test" | "[" | "[["
            | "which" | "type" | "whereis" | "true" | "false" | "pwd" | "realpath" | "readlink"
            | "basename" | "dirname" | "du" | "df" | "exit" | "return" | "local" | "set"
            | "shift" | "sleep" | "date" | "whoami" | "id" | "uname" | "printenv" | "alias"
            | "hash" | "wait" | "read" | "mktemp" | "seq" | "yes" | "clear" | "history"
            | "jobs" | "kill" | "ps" | "fd" | "locate" => {
                if p == "read" {
                    for a in args.iter().filter(|a| !a.starts_with('-')) {
                        st.vars.insert(a.clone(), UNK.to_string());
                    }
                }
            }
            "cd" | "pushd" | "popd" => {
                let target = args
                    .iter()
                    .find(|a| !a.starts_with('-') || a.as_str() == "-");
                st.cwd = match (p, target.map(String::as_str)) {
                    ("popd", _) | (_, Some("-")) => None,
                    (_, None) => Some(self.home_str.clone()),
                    (_, Some(t)) if has_sentinel(t) && !t.starts_with('/') && st.cwd.is_none() => {
                        None
                    }
                    (_, Some(t)) => Some(join(&split_abs(t, &base))),
                };
            }
            "export" | "readonly" | "declare" | "typeset" => {
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    if let Some((k, v)) = a.split_once('=') {
                        st.vars.insert(k.to_owned(), v.to_owned());
                    }
                }
            }
            "unset" => {
                for a in args {
                    st.vars.insert(a.clone(), UNK.to_string());
                }
            }
            // Wrappers: analyse the wrapped command.
            "sudo" | "doas" | "sudoedit" => {
                if p == "sudoedit"
                    || args
                        .iter()
                        .take_while(|a| a.starts_with('-'))
                        .any(|a| a == "-e" || a == "--edit")
                {
                    let files: Vec<String> = args
                        .iter()
                        .filter(|a| !a.starts_with('-'))
                        .cloned()
                        .collect();
                    self.generic(&files, &base, Access::Write, "`sudoedit` of");
                    return None;
                }
                let rest = skip_options(
                    args,
                    &[
                        "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R", "--user",
                        "--group",
                    ],
                );
                return self.dispatch(rest, st, cx);
            }
            "env" => {
                let mut i = 0;
                let mut sub = st.clone();
                while i < args.len() {
                    let a = &args[i];
                    if a == "-C" || a == "--chdir" {
                        if let Some(d) = args.get(i + 1) {
                            sub.cwd = Some(join(&split_abs(d, &base)));
                        }
                        i += 2;
                    } else if a == "-u" || a == "--unset" {
                        i += 2;
                    } else if a == "-S" || a == "--split-string" {
                        let joined = args[i + 1..].join(" ");
                        self.nested_shell(&joined, &mut sub, cx.depth);
                        return None;
                    } else if a.starts_with('-') || a.contains('=') {
                        i += 1;
                    } else {
                        break;
                    }
                }
                return self.dispatch(&args[i..], &mut sub, cx);
            }
            "nohup" | "command" | "builtin" | "exec" | "setsid" | "unbuffer" | "caffeinate"
            | "torsocks" | "chronic" | "strace" | "ltrace" => {
                if p == "command" && args.first().is_some_and(|a| a == "-v" || a == "-V") {
                    return None;
                }
                let rest = skip_options(args, &["-o", "-e", "-p", "-s"]);
                return self.dispatch(rest, st, cx);
            }
            "nice" | "ionice" | "stdbuf" | "chrt" | "taskset" => {
                let rest = skip_options(args, &["-n", "-c", "-i", "-o", "-e", "-p"]);
                // chrt/taskset take a priority/mask operand first.
                let rest = if matches!(p, "chrt" | "taskset") && !rest.is_empty() {
                    &rest[1..]
                } else {
                    rest
                };
                return self.dispatch(rest, st, cx);
            }
            "timeout" => {
                let rest = skip_options(args, &["-s", "-k", "--signal", "--kill-after"]);
                return self.dispatch(rest.get(1..).unwrap_or(&[]), st, cx);
            }
            "xargs" => {
                let rest = skip_options(
                    args,
                    &[
                        "-I",
                        "-i",
                        "-n",
                        "-P",
                        "-d",
                        "-L",
                        "-l",
                        "-s",
                        "-E",
                        "-e",
                        "-a",
                        "--max-args",
                        "--max-procs",
                        "--delimiter",
                        "--arg-file",
                    ],
                );
                let mut full: Vec<String> = if rest.is_empty() {
                    vec!["echo".into()]
                } else {
                    rest.to_vec()
                };
                if let Some(input) = cx.input {
                    full.extend(
                        input.iter().flat_map(|s| {
                            s.split_whitespace().map(str::to_owned).collect::<Vec<_>>()
                        }),
                    );
                } else {
                    full.push(UNK.to_string());
                }
                let inner = CmdCtx { input: None, ..*cx };
                return self.dispatch(&full, st, &inner);
            }
            "eval" => {
                let joined = args.join(" ");
                self.nested_shell(&joined, st, cx.depth);
            }
            "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "fish" | "busybox" | "ash" => {
                if p == "busybox" {
                    return self.dispatch(args, st, cx);
                }
                let mut i = 0;
                let mut script: Option<String> = None;
                while i < args.len() {
                    let a = &args[i];
                    if a.starts_with('-') && !a.starts_with("--") && a.contains('c') {
                        script = args.get(i + 1).cloned();
                        break;
                    }
                    if a == "-o" || a == "+o" || a == "--rcfile" || a == "--init-file" {
                        i += 2;
                        continue;
                    }
                    if !a.starts_with('-') && !a.starts_with('+') {
                        // A script file: reading it is fine; naming a protected one is not.
                        self.generic(&args[i..], &base, Access::Write, &format!("{what} script"));
                        break;
                    }
                    i += 1;
                }
                let mut sub = st.clone();
                if let Some(code) = script {
                    self.nested_shell(&code, &mut sub, cx.depth);
                }
                for body in cx.heredocs {
                    self.nested_shell(body, &mut sub, cx.depth);
                }
                if let Some(input) = cx.input {
                    self.nested_shell(&input.join(" "), &mut sub, cx.depth);
                }
            }
            "source" | "." => self.generic(args, &base, Access::Read, &format!("{what} of")),
            "python" | "python2" | "python3" | "node" | "nodejs" | "perl" | "ruby" | "php"
            | "deno" | "bun" | "lua" | "osascript" | "pwsh" | "powershell" | "tclsh"
            | "rscript" | "julia" | "awk" | "gawk" | "mawk" | "nawk" | "jshell" | "irb" => {
                if p == "bun" && args.first().is_some_and(|a| a == "pm" || a == "config") {
                    return self.pkg_manager(p, args, &base);
                }
                self.interpreter(p, args, st, cx);
            }
            "git" => self.git(args, st),
            "npm" | "pnpm" | "yarn" | "npx" | "pnpx" => {
                self.pkg_manager(p, args, &base);
            }
            "tee" => {
                let files: Vec<String> = args
                    .iter()
                    .filter(|a| !a.starts_with('-'))
                    .cloned()
                    .collect();
                self.generic(&files, &base, Access::Write, &what);
            }
            "cp" | "mv" | "install" | "ln" | "rsync" | "scp" | "link" => {
                self.copy_like(p, args, &base, st)
            }
            "dd" => {
                for a in args {
                    if let Some(f) = a.strip_prefix("of=") {
                        self.path(f, &base, Access::Write, "`dd of=`");
                    } else if let Some(f) = a.strip_prefix("if=") {
                        self.path(f, &base, Access::Read, "`dd if=`");
                    }
                }
            }
            "sed" | "gsed" => self.sed(args, st),
            "rm" | "rmdir" | "unlink" | "shred" | "truncate" | "touch" | "chmod" | "chown"
            | "chgrp" | "mkdir" | "mkfifo" | "mknod" | "setfacl" | "chattr" | "srm" | "wipe" => {
                self.writer(p, args, &base)
            }
            "find" => self.find(args, st, cx),
            "cat" | "tac" | "less" | "more" | "head" | "tail" | "wc" | "diff" | "cmp" | "comm"
            | "sort" | "uniq" | "cut" | "paste" | "base64" | "base32" | "xxd" | "od"
            | "hexdump" | "strings" | "bat" | "batcat" | "nl" | "rev" | "fold" | "fmt"
            | "md5sum" | "sha1sum" | "sha256sum" | "sha512sum" | "cksum" | "b2sum" | "iconv"
            | "column" | "zcat" | "bzcat" | "xzcat" | "zless" | "view" | "pr" | "expand"
            | "look" => {
                self.generic(args, &base, Access::Read, &what);
            }
            "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "jq" | "yq" | "zgrep" => {
                // The first operand is the pattern/filter unless given by option.
                let explicit = args.iter().any(|a| {
                    a == "-e"
                        || a == "-f"
                        || a.starts_with("--regexp")
                        || a.starts_with("--file")
                        || a == "--from-file"
                });
                let mut skipped = explicit;
                let mut files = Vec::new();
                let mut i = 0;
                while i < args.len() {
                    let a = &args[i];
                    if a == "-e"
                        || a == "-f"
                        || a == "--regexp"
                        || a == "--file"
                        || a == "--from-file"
                        || a == "--arg"
                        || a == "--argjson"
                        || a == "-g"
                        || a == "--glob"
                        || a == "-t"
                        || a == "--type"
                    {
                        if a == "-f" || a == "--file" || a == "--from-file" {
                            files.extend(args.get(i + 1).cloned());
                        }
                        i += if a == "--arg" || a == "--argjson" {
                            3
                        } else {
                            2
                        };
                        continue;
                    }
                    if a.starts_with('-') {
                        files.extend(a.split_once('=').map(|(_, v)| v.to_owned()));
                    } else if !skipped {
                        skipped = true;
                    } else {
                        files.push(a.clone());
                    }
                    i += 1;
                }
                self.generic(&files, &base, Access::Read, &what);
            }
            _ => {
                if let Some(cat) = self.indirect(p, args) {
                    let (cat, path, how) = cat;
                    self.report(
                        cat,
                        path,
                        format!(
                            "`{p} {}` {how} ({})",
                            args.iter()
                                .take(3)
                                .map(|a| a.chars().map(shell::unsentinel).collect::<String>())
                                .collect::<Vec<_>>()
                                .join(" "),
                            cat.as_str()
                        ),
                    );
                    return None;
                }
                self.generic(
                    args,
                    &base,
                    Access::Write,
                    &format!("{what} (not analysed) names"),
                );
            }
        }
        None
    }

    /// Checks every argument (and `--opt=value` values, `@file`, `a:b` pieces) as a path.
    fn generic(&mut self, args: &[String], base: &str, access: Access, what: &str) {
        for a in args {
            if self.hit.is_some() {
                return;
            }
            let mut cands: Vec<&str> = Vec::with_capacity(3);
            if a.starts_with('-') {
                if let Some((_, v)) = a.split_once('=') {
                    cands.push(v);
                }
            } else {
                cands.push(a);
                if let Some((_, v)) = a.split_once('=') {
                    cands.push(v);
                }
            }
            for c in cands {
                let c = c.trim_start_matches('@');
                if self.path(c, base, access, what) {
                    return;
                }
                if c.contains(':') && !c.contains("://") {
                    for piece in c.split(':') {
                        if self.path(piece, base, access, what) {
                            return;
                        }
                    }
                }
            }
        }
    }

    fn nested_shell(&mut self, code: &str, st: &mut ShState, depth: usize) {
        if depth + 1 > MAX_DEPTH {
            return;
        }
        match shell::parse(code) {
            Ok(script) => self.script(&script, st, depth + 1),
            Err(e) => {
                let saved = std::mem::take(&mut self.origin);
                self.origin = format!(
                    "{saved} (nested code could not be parsed: {}; scanned as text)",
                    e.0
                );
                self.scan_text(code, st, "the nested code names");
                self.origin = saved;
            }
        }
    }

    fn interpreter(&mut self, p: &str, args: &[String], st: &ShState, cx: &CmdCtx<'_>) {
        let base = st.base();
        let mut in_place = false;
        let mut code: Vec<&str> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        let awk = p.ends_with("awk");
        let mut i = 0;
        let mut program_seen = false;
        while i < args.len() {
            let a = args[i].as_str();
            if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") {
                let flags = &a[1..];
                if (p == "perl" || p == "ruby") && flags.contains('i') {
                    in_place = true;
                }
                if awk && a == "-i" && args.get(i + 1).is_some_and(|x| x == "inplace") {
                    in_place = true;
                    i += 2;
                    continue;
                }
                let takes_code =
                    matches!(flags.chars().last(), Some('c' | 'e' | 'E' | 'p' | 'r')) && !awk;
                if takes_code || (awk && (a == "-f" || a == "-v")) {
                    if let Some(c) = args.get(i + 1) {
                        if awk && a == "-f" {
                            files.push(c.clone());
                        } else {
                            code.push(c);
                        }
                        program_seen = true;
                    }
                    i += 2;
                    continue;
                }
                i += 1;
                continue;
            }
            if a == "--eval" || a == "--print" || a == "--command" {
                code.extend(args.get(i + 1).map(String::as_str));
                program_seen = true;
                i += 2;
                continue;
            }
            if a.starts_with("--") {
                i += 1;
                continue;
            }
            if awk && !program_seen {
                code.push(a);
                program_seen = true;
            } else {
                files.push(a.to_owned());
            }
            i += 1;
        }
        let what = format!("`{p}` code (not analysed) names");
        for c in code {
            self.scan_text(c, st, &what);
        }
        for body in cx.heredocs {
            self.scan_text(body, st, &what);
        }
        if let Some(input) = cx.input {
            self.scan_text(&input.join(" "), st, &what);
        }
        let what = if in_place {
            format!("`{p} -i` edits")
        } else {
            format!("`{p}` is given")
        };
        self.generic(&files, &base, Access::Write, &what);
    }

    fn sed(&mut self, args: &[String], st: &ShState) {
        let base = st.base();
        let mut in_place = false;
        let mut script_given = false;
        let mut scripts: Vec<&str> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "-e" || a == "--expression" {
                scripts.extend(args.get(i + 1).map(String::as_str));
                script_given = true;
                i += 2;
                continue;
            }
            if a == "-f" || a == "--file" {
                files.extend(args.get(i + 1).cloned());
                script_given = true;
                i += 2;
                continue;
            }
            if let Some(v) = a.strip_prefix("--expression=") {
                scripts.push(v);
                script_given = true;
            } else if a.starts_with("--in-place") {
                in_place = true;
            } else if a == "-l" || a == "--line-length" {
                i += 1;
            } else if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") {
                if a[1..].starts_with('i') || a[1..].contains('i') && !a[1..].starts_with('l') {
                    in_place = true;
                }
                if a.ends_with('e') {
                    scripts.extend(args.get(i + 1).map(String::as_str));
                    script_given = true;
                    i += 1;
                }
            } else if !script_given {
                scripts.push(a);
                script_given = true;
            } else {
                files.push(a.to_owned());
            }
            i += 1;
        }
        for s in scripts {
            self.scan_text(s, st, "`sed` script names");
        }
        let (access, what) = if in_place {
            (Access::Write, "`sed -i` edits")
        } else {
            (Access::Read, "`sed`")
        };
        self.generic(&files, &base, access, what);
    }

    fn writer(&mut self, p: &str, args: &[String], base: &str) {
        let recursive = args.iter().any(|a| {
            a == "--recursive"
                || (a.starts_with('-')
                    && !a.starts_with("--")
                    && (a.contains('r') || a.contains('R'))
                    && matches!(
                        p,
                        "rm" | "chmod" | "chown" | "chgrp" | "setfacl" | "shred" | "srm" | "wipe"
                    ))
        });
        let value_opts: &[&str] = match p {
            "truncate" => &["-s", "--size", "-r", "--reference"],
            "touch" => &["-d", "-t", "-r", "--date", "--reference"],
            "mkdir" | "mkfifo" | "mknod" => &["-m", "--mode"],
            "shred" => &["-n", "-s", "--iterations", "--size"],
            _ => &[],
        };
        let mut operands: Vec<String> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if value_opts.contains(&a.as_str()) {
                i += 2;
                continue;
            }
            if !a.starts_with('-') || a == "-" {
                operands.push(a.clone());
            }
            i += 1;
        }
        // chmod/chown/chgrp/setfacl/chattr: the first operand is the mode/owner/acl.
        let has_reference = args.iter().any(|a| a.starts_with("--reference"));
        if matches!(p, "chmod" | "chown" | "chgrp" | "setfacl" | "chattr")
            && !has_reference
            && !operands.is_empty()
        {
            operands.remove(0);
        }
        let access = if recursive {
            Access::Subtree
        } else {
            Access::Write
        };
        self.generic(&operands, base, access, &format!("`{p}`"));
    }

    fn copy_like(&mut self, p: &str, args: &[String], base: &str, st: &ShState) {
        let value_opts: &[&str] = match p {
            "install" => &[
                "-m", "-o", "-g", "-S", "--mode", "--owner", "--group", "--suffix",
            ],
            "rsync" => &[
                "-e",
                "--rsh",
                "--exclude",
                "--include",
                "--filter",
                "-f",
                "--rsync-path",
                "--files-from",
                "--exclude-from",
                "--include-from",
                "--chmod",
                "--chown",
                "--backup-dir",
                "--partial-dir",
                "--temp-dir",
                "-T",
                "--port",
            ],
            "scp" => &["-i", "-P", "-o", "-F", "-c", "-l", "-S", "-J"],
            _ => &["-S", "--suffix"],
        };
        let mut target_dir: Option<String> = None;
        let mut operands: Vec<String> = Vec::new();
        let mut reads: Vec<String> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if a == "-t" || a == "--target-directory" {
                target_dir = args.get(i + 1).cloned();
                i += 2;
                continue;
            }
            if let Some(v) = a.strip_prefix("--target-directory=") {
                target_dir = Some(v.to_owned());
            } else if value_opts.contains(&a.as_str()) {
                if matches!(
                    a.as_str(),
                    "-i" | "-F" | "--files-from" | "--exclude-from" | "--include-from"
                ) {
                    reads.extend(args.get(i + 1).cloned());
                }
                i += 2;
                continue;
            } else if a == "--" {
                operands.extend(args[i + 1..].iter().cloned());
                break;
            } else if !a.starts_with('-') {
                operands.push(a.clone());
            }
            i += 1;
        }
        self.generic(&reads, base, Access::Read, &format!("`{p}` option"));
        let remote = |s: &str| matches!(s.find(':'), Some(c) if !s[..c].contains('/'));
        let (sources, dest): (Vec<String>, Option<String>) = match (&target_dir, operands.len()) {
            (Some(d), _) => (operands.clone(), Some(format!("{d}/"))),
            (None, 0) => (vec![], None),
            (None, 1) if matches!(p, "ln" | "link") => (operands.clone(), Some("./".into())),
            (None, 1) => (operands.clone(), None),
            (None, n) => (operands[..n - 1].to_vec(), Some(operands[n - 1].clone())),
        };
        let src_access = match p {
            "mv" => Access::Subtree,
            "ln" | "link" => Access::Write,
            _ => Access::Read,
        };
        let srcs: Vec<String> = sources.iter().filter(|s| !remote(s)).cloned().collect();
        self.generic(&srcs, base, src_access, &format!("`{p}` source"));
        let Some(dest) = dest.filter(|d| !remote(d)) else {
            return;
        };
        self.path(&dest, base, Access::Write, &format!("`{p}` destination"));
        let dest_abs = join(&split_abs(&dest, base));
        let is_dir = dest.ends_with('/')
            || (!has_sentinel(&dest_abs) && self.fs.is_dir(Path::new(&dest_abs)));
        if is_dir {
            for s in &sources {
                let name = s.trim_end_matches('/').rsplit('/').next().unwrap_or(s);
                self.path(
                    &format!("{dest_abs}/{name}"),
                    base,
                    Access::Write,
                    &format!("`{p}` destination"),
                );
            }
        }
        if matches!(p, "ln" | "link") && sources.len() == 1 {
            let link = if is_dir {
                let name = sources[0]
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_owned();
                split_abs(&name, &dest_abs)
            } else {
                split_abs(&dest, base)
            };
            self.links.push((link, split_abs(&sources[0], &st.base())));
        }
    }

    fn find(&mut self, args: &[String], st: &mut ShState, cx: &CmdCtx<'_>) {
        let base = st.base();
        let start = args
            .iter()
            .position(|a| a.starts_with('-') || a == "(" || a == "!")
            .unwrap_or(args.len());
        let roots = &args[..start];
        let expr = &args[start..];
        let acts = expr.iter().any(|a| {
            matches!(
                a.as_str(),
                "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir"
            )
        });
        let mut i = 0;
        while i < expr.len() {
            let a = expr[i].as_str();
            match a {
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(f) = expr.get(i + 1) {
                        self.path(f, &base, Access::Write, "`find -fprint`");
                    }
                }
                "-name" | "-iname" | "-path" | "-ipath" | "-wholename" if acts => {
                    if let Some(pat) = expr.get(i + 1) {
                        // The pattern arrives unexpanded (quoted); treat glob chars as globs.
                        let pat: String = pat
                            .chars()
                            .map(|c| match c {
                                '*' => STAR,
                                '?' => ONE,
                                c => c,
                            })
                            .collect();
                        let comps: Vec<Comp> = pat
                            .split('/')
                            .filter(|c| !c.is_empty())
                            .map(norm_comp)
                            .collect();
                        if let Some(cat) = categorize(&comps) {
                            let shown: String = pat.chars().map(shell::unsentinel).collect();
                            self.report(
                                cat,
                                Some(shown.clone()),
                                format!(
                                    "`find {a} {shown}` with -delete/-exec acts on {} files",
                                    cat.as_str()
                                ),
                            );
                            return;
                        }
                    }
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = expr[i + 1..]
                        .iter()
                        .position(|x| x == ";" || x == "+")
                        .map_or(expr.len(), |o| i + 1 + o);
                    let cmd: Vec<String> = expr[i + 1..end]
                        .iter()
                        .map(|x| {
                            if x == "{}" {
                                UNK.to_string()
                            } else {
                                x.clone()
                            }
                        })
                        .collect();
                    let inner = CmdCtx {
                        heredocs: &[],
                        input: None,
                        depth: cx.depth + 1,
                    };
                    self.dispatch(&cmd, st, &inner);
                    i = end;
                }
                _ => {}
            }
            i += 1;
        }
        if acts {
            self.generic(
                roots,
                &base,
                Access::Write,
                "`find` with -delete/-exec under",
            );
        }
    }

    fn git(&mut self, args: &[String], st: &ShState) {
        let mut base = st.base();
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            match a {
                "-C" => {
                    if let Some(d) = args.get(i + 1) {
                        base = join(&split_abs(d, &base));
                    }
                    i += 2;
                }
                "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => i += 2,
                _ if a.starts_with('-') => i += 1,
                _ => break,
            }
        }
        let Some(sub) = args.get(i).map(String::as_str) else {
            return;
        };
        let rest = &args[i + 1..];
        match sub {
            "config" => {
                let readonly_opt = rest.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "--get"
                            | "--get-all"
                            | "--get-regexp"
                            | "--get-urlmatch"
                            | "--list"
                            | "-l"
                            | "--get-color"
                            | "--get-colorbool"
                    )
                });
                let mut file: Option<&str> = None;
                let mut scope = ".git/config";
                let mut operands: Vec<&str> = Vec::new();
                let mut writes_opt = false;
                let mut j = 0;
                while j < rest.len() {
                    let a = rest[j].as_str();
                    match a {
                        "--global" => scope = "~/.gitconfig",
                        "--system" => scope = "/etc/gitconfig",
                        "-f" | "--file" => {
                            file = rest.get(j + 1).map(String::as_str);
                            j += 1;
                        }
                        "--blob" | "--type" | "--default" | "--comment" | "--value" => j += 1,
                        "--unset" | "--unset-all" | "--add" | "--replace-all"
                        | "--rename-section" | "--remove-section" | "-e" | "--edit" => {
                            writes_opt = true
                        }
                        _ if a.starts_with("--file=") => file = Some(&a[7..]),
                        _ if a.starts_with('-') => {}
                        _ => operands.push(a),
                    }
                    j += 1;
                }
                let sub_verb = operands.first().copied();
                let writes = if matches!(sub_verb, Some("get" | "list")) || readonly_opt {
                    false
                } else if matches!(
                    sub_verb,
                    Some("set" | "unset" | "rename-section" | "remove-section" | "edit")
                ) {
                    true
                } else {
                    writes_opt || operands.len() >= 2
                };
                if !writes {
                    return;
                }
                match file {
                    Some(f) => {
                        self.path(f, &base, Access::Write, "`git config --file`");
                    }
                    None => self.report(
                        GitConfig,
                        Some(scope.into()),
                        format!("`git config` writes {scope} ({})", GitConfig.as_str()),
                    ),
                }
            }
            "remote"
                if matches!(
                    rest.first().map(String::as_str),
                    Some(
                        "add"
                            | "set-url"
                            | "rename"
                            | "remove"
                            | "rm"
                            | "set-head"
                            | "set-branches"
                    )
                ) =>
            {
                self.report(
                    GitConfig,
                    Some(".git/config".into()),
                    format!(
                        "`git remote {}` writes .git/config ({})",
                        rest[0],
                        GitConfig.as_str()
                    ),
                );
            }
            "credential" | "credential-store" | "credential-cache" => {
                self.report(
                    Credentials,
                    Some("~/.git-credentials".into()),
                    format!(
                        "`git {sub}` reads or writes stored credentials ({})",
                        Credentials.as_str()
                    ),
                );
            }
            "lfs" if rest.first().is_some_and(|a| a == "install") => {
                self.report(
                    GitConfig,
                    Some(".git/hooks".into()),
                    format!(
                        "`git lfs install` writes git hooks and configuration ({})",
                        GitConfig.as_str()
                    ),
                );
            }
            "diff" | "log" | "show" | "status" | "blame" | "grep" | "ls-files" | "cat-file"
            | "rev-parse" | "describe" | "shortlog" | "ls-tree" | "reflog" | "whatchanged"
            | "fetch" | "branch" | "tag" => {
                self.generic(rest, &base, Access::Read, &format!("`git {sub}`"));
            }
            _ => self.generic(rest, &base, Access::Write, &format!("`git {sub}`")),
        }
    }

    fn pkg_manager(&mut self, p: &str, args: &[String], base: &str) -> Option<Vec<String>> {
        let ops: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let (sub, next) = match ops.as_slice() {
            ["npm", s, rest @ ..] if p == "yarn" => (*s, rest.first().copied()),
            ["pm", s, rest @ ..] if p == "bun" => (*s, rest.first().copied()),
            [s, rest @ ..] => (*s, rest.first().copied()),
            [] => return None,
        };
        let writes = match sub {
            "config" | "c" => !matches!(next, Some("get" | "list" | "ls") | None),
            "set" | "login" | "adduser" | "add-user" | "logout" | "token" => {
                p != "npx" && p != "pnpx"
            }
            _ => false,
        };
        if writes {
            self.report(Credentials, Some("~/.npmrc".into()), format!("`{p} {sub}` writes the package manager's configuration/credentials (~/.npmrc) ({})", Credentials.as_str()));
        } else {
            self.generic(args, base, Access::Write, &format!("`{p} {sub}`"));
        }
        None
    }

    /// Commands that write protected files without naming them.
    fn indirect(
        &self,
        p: &str,
        args: &[String],
    ) -> Option<(Category, Option<String>, &'static str)> {
        let ops: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let first = ops.first().copied();
        let second = ops.get(1).copied();
        let flag = |f: &str| args.iter().any(|a| a == f);
        let some =
            |c: Category, path: &str, how: &'static str| Some((c, Some(path.to_owned()), how));
        match p {
            // Our CLI and c2c's: writing a host-local approval verdict, or acting as a session
            // named on the command line, is never a peer-triggered turn's to do.
            "c2c-bridge" | "c2c" => match first {
                Some("approval-reply" | "authorize" | "approve" | "deny") => some(
                    BrokerState,
                    "approval-verdict/",
                    "writes a host-local approval verdict, which only a human may write",
                ),
                _ if args
                    .iter()
                    .any(|a| a == "--session-id" || a.starts_with("--session-id=")) =>
                {
                    Some((
                        BrokerState,
                        None,
                        "acts as a c2c session named on the command line",
                    ))
                }
                _ => None,
            },
            "crontab" => {
                // Only `crontab -l [-u user]` leaves the crontab alone.
                let user = args
                    .iter()
                    .position(|a| a == "-u")
                    .and_then(|k| args.get(k + 1));
                let other_operand = args.iter().any(|a| !a.starts_with('-') && Some(a) != user);
                let listing = flag("-l") && !flag("-r") && !flag("-e") && !other_operand;
                (!listing).then_some((
                    Scheduling,
                    Some("crontab".into()),
                    "edits the user's crontab",
                ))
            }
            "at" | "batch" => (!flag("-l")).then_some((Scheduling, None, "schedules a command")),
            "ssh-keygen" | "ssh-copy-id" | "ssh-add" => {
                some(Credentials, "~/.ssh", "reads or writes SSH keys")
            }
            "gpg" | "gpg2" => {
                const OPS: &[&str] = &[
                    "--import",
                    "--recv-keys",
                    "--receive-keys",
                    "--gen-key",
                    "--generate-key",
                    "--full-generate-key",
                    "--full-gen-key",
                    "--quick-gen-key",
                    "--quick-generate-key",
                    "--edit-key",
                    "--delete-key",
                    "--delete-keys",
                    "--delete-secret-key",
                    "--delete-secret-keys",
                    "--delete-secret-and-public-key",
                    "--export-secret-keys",
                    "--export-secret-subkeys",
                    "--import-ownertrust",
                    "--sign-key",
                    "--lsign-key",
                    "--quick-add-uid",
                    "--quick-set-expire",
                    "--passwd",
                    "--fetch-keys",
                    "--refresh-keys",
                    "--card-edit",
                ];
                args.iter().any(|a| OPS.contains(&a.as_str())).then_some((
                    Credentials,
                    Some("~/.gnupg".into()),
                    "changes or exports the GnuPG keyring",
                ))
            }
            "aws" => matches!(
                (first, second),
                (Some("configure"), _) | (Some("sso"), Some("login")) | (Some("login"), _)
            )
            .then_some((Credentials, Some("~/.aws".into()), "writes AWS credentials")),
            "docker" | "podman" | "nerdctl" => {
                matches!(first, Some("login" | "logout")).then_some((
                    Credentials,
                    Some("~/.docker/config.json".into()),
                    "writes registry credentials",
                ))
            }
            "kubectl" | "oc" => (first == Some("config")
                && !matches!(
                    second,
                    Some(
                        "view" | "get-contexts" | "get-clusters" | "get-users" | "current-context"
                    ) | None
                ))
            .then_some((
                Credentials,
                Some("~/.kube/config".into()),
                "writes the kubeconfig",
            )),
            "gh" => (first == Some("auth") && second != Some("status")).then_some((
                Credentials,
                Some("~/.config/gh".into()),
                "reads or writes GitHub credentials",
            )),
            "gcloud" => (first == Some("auth") && second != Some("list")).then_some((
                Credentials,
                Some("~/.config/gcloud".into()),
                "reads or writes Google Cloud credentials",
            )),
            "az" => matches!(
                (first, second),
                (Some("login" | "logout"), _) | (Some("account"), Some("get-access-token"))
            )
            .then_some((
                Credentials,
                Some("~/.azure".into()),
                "reads or writes Azure credentials",
            )),
            "cargo" => matches!(first, Some("login" | "logout")).then_some((
                Credentials,
                Some("~/.cargo/credentials.toml".into()),
                "writes registry credentials",
            )),
            "pip" | "pip3" => (first == Some("config")
                && matches!(second, Some("set" | "unset" | "edit")))
            .then_some((
                Credentials,
                Some("pip.conf".into()),
                "writes pip's configuration (index credentials)",
            )),
            "poetry" => (first == Some("config") && !flag("--list") && ops.len() >= 2).then_some((
                Credentials,
                Some("poetry config".into()),
                "writes poetry's configuration (credentials)",
            )),
            "opencode" => (first == Some("auth")).then_some((
                Credentials,
                Some("~/.local/share/opencode/auth.json".into()),
                "reads or writes OpenCode's provider credentials",
            )),
            "claude" => (matches!(first, Some("config" | "mcp"))
                && !matches!(second, Some("get" | "list") | None))
            .then_some((
                PermissionConfig,
                Some("~/.claude.json".into()),
                "changes Claude Code's configuration",
            )),
            "visudo" => some(Privilege, "/etc/sudoers", "edits sudoers"),
            "useradd" | "usermod" | "userdel" | "groupadd" | "groupmod" | "groupdel"
            | "gpasswd" | "passwd" | "chpasswd" | "adduser" | "deluser" | "addgroup"
            | "delgroup" | "vipw" | "vigr" | "setcap" | "chage" => {
                some(Privilege, "/etc/passwd", "changes accounts or privileges")
            }
            "chsh" => some(ShellStartup, "/etc/passwd", "changes the login shell"),
            "launchctl" => matches!(first, Some("load" | "bootstrap" | "enable" | "submit"))
                .then_some((
                    Scheduling,
                    Some("~/Library/LaunchAgents".into()),
                    "installs a launchd job",
                )),
            "systemctl" => matches!(
                first,
                Some(
                    "enable"
                        | "reenable"
                        | "link"
                        | "edit"
                        | "preset"
                        | "preset-all"
                        | "add-wants"
                        | "add-requires"
                        | "set-property"
                        | "revert"
                        | "mask"
                        | "unmask"
                )
            )
            .then_some((
                Scheduling,
                Some("~/.config/systemd".into()),
                "changes systemd units",
            )),
            "systemd-run" => args.iter().any(|a| a.starts_with("--on-")).then_some((
                Scheduling,
                None,
                "schedules a timer",
            )),
            "loginctl" => (first == Some("enable-linger")).then_some((
                Scheduling,
                None,
                "lets user services outlive the session",
            )),
            "direnv" => matches!(first, Some("allow" | "permit" | "grant")).then_some((
                ShellStartup,
                Some(".envrc".into()),
                "authorises an .envrc to run on cd",
            )),
            _ => None,
        }
    }
}

/// Skips leading options (and the values of those in `with_value`), stopping at `--`.
fn skip_options<'s>(args: &'s [String], with_value: &[&str]) -> &'s [String] {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            return &args[i + 1..];
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        i += if with_value.contains(&a) { 2 } else { 1 };
    }
    args.get(i..).unwrap_or(&[])
}
