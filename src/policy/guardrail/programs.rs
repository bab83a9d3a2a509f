//! The table of modeled programs: the single source of truth for what `peerPermissions:
//! allow` can approve in a bash command. A program missing here is "unmodeled" and leaves the
//! request to OpenCode's prompt; so does any option missing from its program's list.
//!
//! Options are matched exactly (GNU's unambiguous abbreviations of long options are not
//! accepted, so `--out` never stands for `--output`). Short options may be combined (`-la`);
//! a short option that takes a value takes the rest of its word or the next word (`-n5`,
//! `-n 5`); a long one `--name=value` or the next word. `--` ends options.

/// What an option's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Val {
    /// No value.
    No,
    /// A value that is not a path (a count, a pattern, a format).
    Text,
    /// A value only in the attached form `--name=value` (optional argument).
    Attached,
    /// The destination directory of `cp`/`mv` (`-t DIR`).
    TargetDir,
    /// A pattern (`grep -e`): operands are then all files.
    Pattern,
    /// A file of patterns (`grep -f`): read, and operands are then all files.
    PatternFile,
}

/// What an option does beyond its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flag {
    /// Nothing the guardrail needs to know.
    None,
    /// Recursive (`rm -r`, `grep -r`).
    Recursive,
}

/// One accepted option.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opt {
    /// Its spellings, e.g. `["-n", "--line-number"]`.
    pub names: &'static [&'static str],
    pub val: Val,
    pub flag: Flag,
}

/// How a program treats its operands (non-option words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Operands are text, never opened (`echo`, `basename`, `test`).
    Text,
    /// `echo`: leading `-n`/`-e`/`-E` words, the rest text (echo has no `--`).
    Echo,
    /// `printf`: text; no option at all (`-v` assigns a variable).
    Printf,
    /// Operands are paths whose names/metadata are looked at (`ls`, `stat`).
    List,
    /// Operands are paths whose contents are read (`cat`, `head`).
    Read,
    /// Like `Read`, at most one operand (`uniq IN OUT` writes OUT).
    ReadOne,
    /// `grep`: the first operand is the pattern unless `-e`/`-f` gave one; the rest are read;
    /// with `-r` a directory is read recursively (default `.`).
    Grep,
    /// `rg`: like `grep`, always recursive, default `.`.
    Rg,
    /// `find`: start paths listed; the expression is checked against an allow-list of
    /// predicates (no `-exec`, `-delete`, `-fprint`, …).
    Find,
    /// `date`: only `+FORMAT` operands (an operand sets the clock).
    Date,
    /// `mkdir`: creates the operand directories (and parents with `-p`).
    Mkdir,
    /// `touch`: creates or updates the operand files.
    Touch,
    /// `rm`: removes the operands (the link itself, not its target); with `-r` whole trees.
    Rm,
    /// `cp`: reads the sources, writes the destination (or `DIR/name` for an existing
    /// directory or `-t DIR`).
    Cp,
    /// `mv`: removes the sources (not symlinks), writes the destination as `cp` does.
    Mv,
    /// `cd`: changes the working directory for the rest of the command.
    Cd,
    /// `git`: one read-only subcommand from [`GIT`].
    Git,
    /// `sed -n SCRIPT FILE…` where SCRIPT only prints lines by number (`12p`, `1,20p`,
    /// `5,$p`, `$p`): no `w`, `r`, `e` or `s` command can appear. The files are read.
    SedPrint,
}

/// One modeled program.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Program {
    pub name: &'static str,
    /// A bash builtin: not looked up in `PATH`.
    pub builtin: bool,
    pub kind: Kind,
    pub opts: &'static [Opt],
    /// `head -5`: a `-NUMBER` option is accepted.
    pub numeric_opt: bool,
    /// One line for SECURITY.md.
    pub doc: &'static str,
}

const fn o(names: &'static [&'static str]) -> Opt {
    Opt {
        names,
        val: Val::No,
        flag: Flag::None,
    }
}
const fn v(names: &'static [&'static str], val: Val) -> Opt {
    Opt {
        names,
        val,
        flag: Flag::None,
    }
}
const fn r(names: &'static [&'static str]) -> Opt {
    Opt {
        names,
        val: Val::No,
        flag: Flag::Recursive,
    }
}

const fn p(
    name: &'static str,
    builtin: bool,
    kind: Kind,
    opts: &'static [Opt],
    doc: &'static str,
) -> Program {
    Program {
        name,
        builtin,
        kind,
        opts,
        numeric_opt: false,
        doc,
    }
}

const HEAD_TAIL: &[Opt] = &[
    v(&["-n", "--lines"], Val::Text),
    v(&["-c", "--bytes"], Val::Text),
    o(&["-q", "--quiet", "--silent"]),
    o(&["-v", "--verbose"]),
];

const GREP: &[Opt] = &[
    o(&["-n", "--line-number"]),
    o(&["-i", "--ignore-case"]),
    o(&["-v", "--invert-match"]),
    o(&["-c", "--count"]),
    o(&["-l", "--files-with-matches"]),
    o(&["-L", "--files-without-match"]),
    o(&["-w", "--word-regexp"]),
    o(&["-x", "--line-regexp"]),
    o(&["-E", "--extended-regexp"]),
    o(&["-F", "--fixed-strings"]),
    o(&["-G", "--basic-regexp"]),
    o(&["-P", "--perl-regexp"]),
    o(&["-o", "--only-matching"]),
    o(&["-q", "--quiet", "--silent"]),
    o(&["-s", "--no-messages"]),
    o(&["-H", "--with-filename"]),
    o(&["-h", "--no-filename"]),
    o(&["-I"]),
    o(&["-a", "--text"]),
    o(&["-b", "--byte-offset"]),
    r(&["-r", "--recursive"]),
    v(&["-A", "--after-context"], Val::Text),
    v(&["-B", "--before-context"], Val::Text),
    v(&["-C", "--context"], Val::Text),
    v(&["-m", "--max-count"], Val::Text),
    v(&["-e", "--regexp"], Val::Pattern),
    v(&["-f", "--file"], Val::PatternFile),
    v(&["--include", "--exclude", "--exclude-dir"], Val::Text),
    v(&["--color", "--colour"], Val::Attached),
];

const RG: &[Opt] = &[
    o(&["-n", "--line-number"]),
    o(&["-N", "--no-line-number"]),
    o(&["-i", "--ignore-case"]),
    o(&["-s", "--case-sensitive"]),
    o(&["-S", "--smart-case"]),
    o(&["-v", "--invert-match"]),
    o(&["-w", "--word-regexp"]),
    o(&["-x", "--line-regexp"]),
    o(&["-F", "--fixed-strings"]),
    o(&["-l", "--files-with-matches"]),
    o(&["-c", "--count"]),
    o(&["-o", "--only-matching"]),
    o(&["-q", "--quiet"]),
    o(&["-H", "--with-filename"]),
    o(&["-I", "--no-filename"]),
    o(&[
        "--no-heading",
        "--heading",
        "--vimgrep",
        "--json",
        "--files",
    ]),
    v(&["-A", "--after-context"], Val::Text),
    v(&["-B", "--before-context"], Val::Text),
    v(&["-C", "--context"], Val::Text),
    v(&["-m", "--max-count"], Val::Text),
    v(&["-g", "--glob", "--iglob"], Val::Text),
    v(&["-t", "--type", "-T", "--type-not"], Val::Text),
    v(&["-e", "--regexp"], Val::Pattern),
    v(&["-f", "--file"], Val::PatternFile),
    v(&["--color", "--max-depth", "-d"], Val::Text),
];

const COPY: &[Opt] = &[
    o(&["-f", "--force"]),
    o(&["-i", "--interactive"]),
    o(&["-n", "--no-clobber"]),
    o(&["-v", "--verbose"]),
    o(&["-T", "--no-target-directory"]),
    v(&["-t", "--target-directory"], Val::TargetDir),
];

/// Every modeled program. SECURITY.md's generated block is rendered from this table
/// ([`super::allow_table_markdown`]); a unit test keeps the two equal.
#[rustfmt::skip]
pub(crate) static PROGRAMS: &[Program] = &[
    p("cd", true, Kind::Cd, &[],
      "`cd DIR` (no options, no `-`, no `CDPATH` search): later paths resolve from DIR; both the old and the new directory are checked"),
    p("pwd", true, Kind::Text, &[o(&["-L", "-P"])], "prints the directory"),
    p("echo", true, Kind::Echo, &[], "prints its arguments (`-n`, `-e`, `-E`)"),
    p("printf", true, Kind::Printf, &[], "prints (no options: `-v` assigns a variable)"),
    p("true", true, Kind::Text, &[], "does nothing"),
    p("false", true, Kind::Text, &[], "does nothing"),
    p("test", true, Kind::Text, &[], "tests file names and strings"),
    p("[", true, Kind::Text, &[], "tests file names and strings"),
    p("ls", false, Kind::List, &[
        o(&["-a", "--all", "-A", "--almost-all", "-l", "-h", "--human-readable", "-1", "-t",
            "-r", "--reverse", "-S", "-d", "--directory", "-F", "--classify", "-p", "-i",
            "--inode", "-s", "--size", "-R", "--recursive", "-G", "-n", "-o", "-g", "-X", "-U",
            "-v", "-x", "-C", "-m", "-Q", "-N", "-L", "--full-time"]),
        v(&["--color", "--group-directories-first"], Val::Attached),
    ], "lists names and metadata"),
    p("tree", false, Kind::List, &[
        o(&["-a", "-d", "-f", "-F", "--noreport", "-C", "-n", "--dirsfirst"]),
        v(&["-L", "-I", "-P"], Val::Text),
    ], "lists names (no `-o`)"),
    p("stat", false, Kind::List, &[
        o(&["-L", "--dereference", "-t", "--terse", "-f"]),
        v(&["-c", "--format", "--printf"], Val::Text),
    ], "shows metadata"),
    p("du", false, Kind::List, &[
        o(&["-s", "-h", "-a", "-c", "-k", "-m", "-b", "-x", "--summarize", "--human-readable"]),
        v(&["-d", "--max-depth"], Val::Text),
    ], "sizes of names"),
    p("realpath", false, Kind::List, &[o(&["-e", "-m", "-s", "-q", "-L", "-P", "-z"])],
      "resolves names"),
    p("readlink", false, Kind::List, &[o(&["-f", "-e", "-m", "-n", "-q", "-s", "-v", "-z"])],
      "reads link targets"),
    p("basename", false, Kind::Text, &[o(&["-a", "-z"]), v(&["-s", "--suffix"], Val::Text)],
      "strips a name"),
    p("dirname", false, Kind::Text, &[o(&["-z"])], "strips a name"),
    p("which", false, Kind::Text, &[o(&["-a"])], "finds a program in PATH"),
    p("whoami", false, Kind::Text, &[], "prints the user"),
    p("uname", false, Kind::Text, &[o(&["-a", "-s", "-r", "-m", "-n", "-o", "-v", "-p", "-i"])],
      "prints the system"),
    p("sleep", false, Kind::Text, &[], "waits"),
    p("seq", false, Kind::Text, &[o(&["-w"]), v(&["-s", "-f"], Val::Text)], "prints numbers"),
    p("date", false, Kind::Date, &[
        o(&["-u", "--utc", "-R", "--rfc-email"]),
        v(&["-d", "--date"], Val::Text),
        v(&["-I", "--iso-8601"], Val::Attached),
    ], "prints the date (`+FORMAT` only: an operand sets the clock)"),
    p("cat", false, Kind::Read, &[o(&["-n", "-b", "-A", "-E", "-T", "-s", "-v", "-e", "-t"])],
      "reads files"),
    Program { numeric_opt: true, ..p("head", false, Kind::Read, HEAD_TAIL, "reads files") },
    Program { numeric_opt: true, ..p("tail", false, Kind::Read, HEAD_TAIL, "reads files (no `-f`)") },
    p("wc", false, Kind::Read, &[o(&["-l", "-w", "-c", "-m", "-L", "--lines", "--words", "--bytes", "--chars"])],
      "counts"),
    p("file", false, Kind::Read, &[o(&["-b", "-i", "--mime", "-L"])], "guesses file types"),
    p("cmp", false, Kind::Read, &[o(&["-s", "-l", "-b", "--silent", "--quiet"])], "compares files"),
    p("diff", false, Kind::Read, &[
        o(&["-u", "-q", "-b", "-w", "-B", "-i", "-y", "-N", "--brief", "--ignore-all-space",
            "--side-by-side", "-a", "--text"]),
        v(&["-U", "--unified"], Val::Text),
        v(&["--color"], Val::Attached),
    ], "compares files (no `-r`)"),
    p("sort", false, Kind::Read, &[
        o(&["-n", "-r", "-u", "-f", "-h", "-V", "-b", "-s", "-M", "-g", "-R", "-c", "-C",
            "--numeric-sort", "--reverse", "--unique", "--ignore-case", "--human-numeric-sort",
            "--version-sort", "--stable"]),
        v(&["-k", "--key", "-t", "--field-separator"], Val::Text),
    ], "sorts (no `-o`, `-T`, `--compress-program`)"),
    p("uniq", false, Kind::ReadOne, &[
        o(&["-c", "-d", "-u", "-i", "--count", "--repeated", "--unique", "--ignore-case"]),
        v(&["-f", "-s", "-w"], Val::Text),
    ], "filters lines (one operand: a second one is written)"),
    p("cut", false, Kind::Read, &[
        o(&["-s", "--complement"]),
        v(&["-d", "-f", "-c", "-b", "--delimiter", "--fields"], Val::Text),
    ], "cuts fields"),
    p("nl", false, Kind::Read, &[v(&["-b", "-n", "-w", "-s"], Val::Text)], "numbers lines"),
    p("sed", false, Kind::SedPrint, &[o(&["-n", "--quiet", "--silent"])],
      "only `sed -n 'Np'`, `'N,Mp'`, `'N,$p'`, `'$p'` (prints lines; any other script is left)"),
    p("tr", false, Kind::Text, &[o(&["-d", "-s", "-c", "-C"])], "translates stdin"),
    p("grep", false, Kind::Grep, GREP,
      "searches files; `-r` only under directories whose tree holds no credentials (no `-R`)"),
    p("rg", false, Kind::Rg, RG,
      "searches (recursive) under directories whose tree holds no credentials (no `--hidden`, `-u`, `-L`, `--pre`, `-z`)"),
    p("find", false, Kind::Find, &[],
      "lists names; predicates: -name -iname -path -ipath -type -maxdepth -mindepth -size -mtime -mmin -newer -empty -print -print0 -printf -prune -not -o -a ! ( ) (no -exec, -delete, -fprint, -L)"),
    p("mkdir", false, Kind::Mkdir, &[o(&["-p", "--parents", "-v"]), v(&["-m", "--mode"], Val::Text)],
      "creates directories in the project"),
    p("touch", false, Kind::Touch, &[o(&["-c", "-a", "-m", "--no-create"])],
      "creates files in the project"),
    p("rm", false, Kind::Rm, &[
        o(&["-f", "--force", "-v", "-d", "-i", "-I", "--verbose", "--dir"]),
        r(&["-r", "-R", "--recursive"]),
    ], "removes files in the project; `-r` only for trees holding no protected name"),
    p("cp", false, Kind::Cp, COPY,
      "copies files into the project (no `-r`, `-a`, `-l`, `-s`, `-P`)"),
    p("mv", false, Kind::Mv, COPY, "moves files within the project (sources not symlinks)"),
    p("git", false, Kind::Git, &[],
      "read-only subcommands (see below), in the project's own repository; no global options but `--no-pager`"),
];

/// One modeled git subcommand.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GitSub {
    pub name: &'static str,
    /// Operands: `List` (paths/revisions, names only), `Read` (file contents), `Text`
    /// (revisions/patterns) or `None` (no operand accepted).
    pub operands: Option<Kind>,
    pub opts: &'static [Opt],
}

const GIT_LOG: &[Opt] = &[
    o(&[
        "--oneline",
        "--stat",
        "-p",
        "--patch",
        "--graph",
        "--decorate",
        "--all",
        "--name-only",
        "--name-status",
        "--abbrev-commit",
        "--no-merges",
        "--reverse",
        "--follow",
        "--shortstat",
        "--numstat",
        "-s",
        "--no-patch",
        "--no-color",
        "--first-parent",
    ]),
    v(
        &[
            "-n",
            "--max-count",
            "--since",
            "--until",
            "--after",
            "--before",
            "--author",
            "--grep",
            "--format",
            "--pretty",
            "--date",
        ],
        Val::Text,
    ),
    v(&["--color"], Val::Attached),
];

/// The git subcommands `allow` can approve. No global option (`-c`, `-C`, `--git-dir`,
/// `--exec-path`, …), no `--output`, `--ext-diff`, `--no-index`, `--textconv`.
#[rustfmt::skip]
pub(crate) static GIT: &[GitSub] = &[
    GitSub { name: "status", operands: Some(Kind::List), opts: &[
        o(&["-s", "--short", "-b", "--branch", "-v", "--long", "--no-renames", "--ignored"]),
        v(&["--porcelain", "-u", "--untracked-files"], Val::Attached),
    ]},
    GitSub { name: "diff", operands: Some(Kind::Read), opts: &[
        o(&["--stat", "--cached", "--staged", "--name-only", "--name-status", "--numstat",
            "--shortstat", "--no-color", "-w", "--check", "--exit-code", "--quiet",
            "--ignore-all-space", "--word-diff", "-M", "--minimal"]),
        v(&["-U", "--unified"], Val::Text),
        v(&["--color"], Val::Attached),
    ]},
    GitSub { name: "log", operands: Some(Kind::Read), opts: GIT_LOG },
    GitSub { name: "show", operands: Some(Kind::Read), opts: GIT_LOG },
    GitSub { name: "branch", operands: None, opts: &[
        o(&["-a", "--all", "-r", "--remotes", "-v", "-vv", "--list", "--show-current", "--no-color"]),
    ]},
    GitSub { name: "rev-parse", operands: Some(Kind::Text), opts: &[
        o(&["--show-toplevel", "--abbrev-ref", "--git-dir", "--is-inside-work-tree",
            "--verify", "-q", "--quiet", "--show-prefix", "--show-cdup", "--absolute-git-dir"]),
        v(&["--short"], Val::Attached),
    ]},
    GitSub { name: "ls-files", operands: Some(Kind::List), opts: &[
        o(&["-m", "-o", "-d", "-s", "-c", "-z", "--others", "--exclude-standard", "--cached",
            "--modified", "--deleted", "--stage"]),
    ]},
    GitSub { name: "blame", operands: Some(Kind::Read), opts: &[
        o(&["-w", "-e", "-s", "--porcelain", "-l", "-n"]),
        v(&["-L"], Val::Text),
    ]},
    // `git remote -v` prints remote URLs, which may carry a token (red-team R3): names only.
    GitSub { name: "remote", operands: None, opts: &[] },
    GitSub { name: "version", operands: None, opts: &[] },
];

/// The table entry of `name`, if modeled.
pub(crate) fn program(name: &str) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.name == name)
}

/// The git subcommand entry of `name`, if modeled.
pub(crate) fn git_sub(name: &str) -> Option<&'static GitSub> {
    GIT.iter().find(|g| g.name == name)
}

/// `find` predicates that take no value and act on nothing but names.
pub(crate) const FIND_FLAGS: &[&str] = &[
    "-empty",
    "-print",
    "-print0",
    "-prune",
    "-not",
    "!",
    "(",
    ")",
    "-o",
    "-or",
    "-a",
    "-and",
    "-readable",
    "-writable",
    "-executable",
    "-depth",
    "-xdev",
    "-mount",
    "-true",
    "-false",
    "-ls",
];

/// `find` predicates that take one value that is not a path.
pub(crate) const FIND_TEXT: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-type",
    "-maxdepth",
    "-mindepth",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-perm",
    "-user",
    "-group",
    "-printf",
    "-links",
    "-uid",
    "-gid",
];

/// `find` predicates whose value is a path looked at (metadata only).
pub(crate) const FIND_PATH: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];

/// How the parsed arguments of one command look.
#[derive(Debug, Default)]
pub(crate) struct Args {
    /// Option values by kind: `(value kind, value)`.
    pub values: Vec<(Val, String)>,
    pub recursive: bool,
    /// Operands, in order.
    pub operands: Vec<String>,
}

/// Parses `args` against `opts` (GNU getopt_long style with permutation). `Err` names the
/// first option that is not in the list.
pub(crate) fn parse_args(args: &[String], opts: &[Opt], numeric_opt: bool) -> Result<Args, String> {
    let find = |name: &str| opts.iter().find(|o| o.names.contains(&name));
    let mut out = Args::default();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if only_operands || a == "-" || !a.starts_with('-') {
            out.operands.push(a.clone());
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (a.clone(), None),
            };
            let Some(opt) = find(&name) else {
                return Err(name);
            };
            if opt.flag == Flag::Recursive {
                out.recursive = true;
            }
            match (opt.val, attached) {
                (Val::No, Some(_)) => return Err(a.clone()),
                (Val::No, None) | (Val::Attached, None) => {}
                (Val::Attached, Some(v)) => out.values.push((Val::Text, v)),
                (val, Some(v)) => out.values.push((val, v)),
                (val, None) => {
                    let Some(v) = args.get(i) else {
                        return Err(format!("{name} without a value"));
                    };
                    i += 1;
                    out.values.push((val, v.clone()));
                }
            }
            continue;
        }
        let body = &a[1..];
        if numeric_opt && body.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // Whole-word short options first (`-vv` of git branch, `-I` forms).
        if let Some(opt) = find(a) {
            if opt.val == Val::No {
                if opt.flag == Flag::Recursive {
                    out.recursive = true;
                }
                continue;
            }
        }
        let chars: Vec<char> = body.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let name = format!("-{}", chars[k]);
            let Some(opt) = find(&name) else {
                return Err(name);
            };
            if opt.flag == Flag::Recursive {
                out.recursive = true;
            }
            k += 1;
            match opt.val {
                Val::No => {}
                Val::Attached => {
                    if k < chars.len() {
                        out.values.push((Val::Text, chars[k..].iter().collect()));
                    }
                    break;
                }
                val => {
                    let v: String = if k < chars.len() {
                        chars[k..].iter().collect()
                    } else {
                        let Some(v) = args.get(i) else {
                            return Err(format!("{name} without a value"));
                        };
                        i += 1;
                        v.clone()
                    };
                    out.values.push((val, v));
                    break;
                }
            }
        }
    }
    Ok(out)
}
