//! Protected names: the tables of what the guardrail protects, component normalisation, the
//! sentinel glob, and [`categorize`], which maps a normalised absolute path to its
//! [`Category`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;

use super::shell::{ONE, STAR, UNK};
use super::Category::{self, *};

type Rule = (&'static str, Category);

/// A component with one of these names protects everything under it, wherever it is.
const ANY_COMPONENT: &[Rule] = &[
    (".opencode", PermissionConfig),
    (".claude", PermissionConfig),
    (".ssh", Credentials),
    (".gnupg", Credentials),
    (".aws", Credentials),
    (".kube", Credentials),
    (".docker", Credentials),
    (".azure", Credentials),
    (".password-store", Credentials),
    (".husky", GitConfig),
    ("launchagents", Scheduling),
    ("launchdaemons", Scheduling),
    ("cron.d", Scheduling),
    ("cron.daily", Scheduling),
    ("cron.hourly", Scheduling),
    ("cron.weekly", Scheduling),
    ("cron.monthly", Scheduling),
    ("sudoers.d", Privilege),
    (".c2c", BrokerState),
    ("approval-verdict", BrokerState),
    ("approval-pending", BrokerState),
];

/// Directories under a `.config` component.
const CONFIG_SUB: &[Rule] = &[
    ("opencode", PermissionConfig),
    ("fish", ShellStartup),
    ("systemd", Scheduling),
    ("autostart", Scheduling),
    ("git", GitConfig),
    ("gh", Credentials),
    ("gcloud", Credentials),
];

/// File names protected wherever they are (last component).
const LAST_NAME: &[Rule] = &[
    ("opencode.json", PermissionConfig),
    ("opencode.jsonc", PermissionConfig),
    (".claude.json", PermissionConfig),
    ("agents.md", AgentInstructions),
    ("claude.md", AgentInstructions),
    ("claude.local.md", AgentInstructions),
    (".env", Credentials),
    (".npmrc", Credentials),
    (".netrc", Credentials),
    (".pypirc", Credentials),
    (".git-credentials", Credentials),
    (".pgpass", Credentials),
    (".my.cnf", Credentials),
    (".vault-token", Credentials),
    ("id_rsa", Credentials),
    ("id_ed25519", Credentials),
    ("id_ecdsa", Credentials),
    ("id_dsa", Credentials),
    (".bashrc", ShellStartup),
    (".bash_profile", ShellStartup),
    (".bash_login", ShellStartup),
    (".bash_logout", ShellStartup),
    (".zshrc", ShellStartup),
    (".zprofile", ShellStartup),
    (".zshenv", ShellStartup),
    (".zlogin", ShellStartup),
    (".zlogout", ShellStartup),
    (".profile", ShellStartup),
    (".login", ShellStartup),
    (".cshrc", ShellStartup),
    (".tcshrc", ShellStartup),
    (".kshrc", ShellStartup),
    (".envrc", ShellStartup),
    (".gitconfig", GitConfig),
    ("crontab", Scheduling),
    ("sudoers", Privilege),
];

/// `(parent, child)` pairs protected wherever they are.
const PAIRS: &[(&str, &str, Category)] = &[
    (".git", "config", GitConfig),
    (".git", "hooks", GitConfig),
    (".cargo", "credentials", Credentials),
    (".cargo", "credentials.toml", Credentials),
    (".gem", "credentials", Credentials),
    ("opencode", "auth.json", Credentials),
    ("spool", "cron", Scheduling),
    // $XDG_STATE_HOME/c2c (default ~/.local/state/c2c): c2c's per-repository broker roots.
    ("state", "c2c", BrokerState),
];

/// Entries directly under `/etc`.
const ETC: &[Rule] = &[
    ("passwd", Privilege),
    ("shadow", Privilege),
    ("group", Privilege),
    ("gshadow", Privilege),
    ("pam.d", Privilege),
    ("security", Privilege),
    ("ssh", Privilege),
    ("ld.so.preload", Privilege),
    ("doas.conf", Privilege),
    ("profile", ShellStartup),
    ("profile.d", ShellStartup),
    ("bash.bashrc", ShellStartup),
    ("bashrc", ShellStartup),
    ("zshrc", ShellStartup),
    ("zsh", ShellStartup),
    ("zprofile", ShellStartup),
    ("zshenv", ShellStartup),
    ("environment", ShellStartup),
    ("gitconfig", GitConfig),
    ("systemd", Scheduling),
    ("init.d", Scheduling),
    ("rc.local", Scheduling),
    ("anacrontab", Scheduling),
];

/// One normalised path component. `s` may hold glob/unknown sentinels.
pub(super) struct Comp<'a> {
    pub(super) s: Cow<'a, str>,
    pub(super) pattern: bool,
    pub(super) opaque: bool,
}

pub(super) fn norm_comp(raw: &str) -> Comp<'_> {
    if raw.is_ascii() {
        // ASCII is NFKC-stable, holds no sentinel, and its only invisible characters are the
        // controls (C0 and DEL); lowercasing is the ASCII one. Already normalised (the usual
        // case): borrowed, no allocation.
        let s: Cow<'_, str> = if raw
            .bytes()
            .all(|b| b >= 0x20 && b != 0x7f && !b.is_ascii_uppercase())
        {
            Cow::Borrowed(raw)
        } else {
            Cow::Owned(
                raw.bytes()
                    .filter(|&b| b >= 0x20 && b != 0x7f)
                    .map(|b| char::from(b.to_ascii_lowercase()))
                    .collect(),
            )
        };
        return Comp {
            s,
            pattern: false,
            opaque: false,
        };
    }
    let s: String = raw
        .nfkc()
        .filter(|&c| !crate::envelope::needs_escape(c))
        .flat_map(char::to_lowercase)
        .collect();
    let pattern = s.chars().any(|c| matches!(c, STAR | ONE | UNK));
    let opaque = !s.is_empty() && s.chars().all(|c| c == UNK);
    Comp {
        s: Cow::Owned(s),
        pattern,
        opaque,
    }
}

impl Comp<'_> {
    pub(super) fn is(&self, name: &str) -> bool {
        if self.opaque {
            false
        } else if self.pattern {
            glob(&self.s, name)
        } else {
            *self.s == *name
        }
    }
    pub(super) fn is_env_file(&self) -> bool {
        if self.pattern {
            !self.opaque && (glob(&self.s, ".env") || glob(&self.s, ".env.local"))
        } else {
            *self.s == *".env" || self.s.starts_with(".env.")
        }
    }
}

/// Glob match of a sentinel pattern against a literal name. `*`/`?` at the start do not match
/// a leading dot (bash without `dotglob`); an unknown value does.
pub(super) fn glob(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    if n.first() == Some(&'.') && matches!(p.first(), Some(&STAR) | Some(&ONE)) {
        return false;
    }
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut back: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == ONE || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && (p[pi] == STAR || p[pi] == UNK) {
            back = Some((pi, ni));
            pi += 1;
        } else if let Some((bp, bn)) = back {
            pi = bp + 1;
            ni = bn + 1;
            back = Some((bp, bn + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && (p[pi] == STAR || p[pi] == UNK) {
        pi += 1;
    }
    pi == p.len()
}

/// A literal-name index of one table: the first rule of each name (as a scan finds it).
struct Index(HashMap<&'static str, Category>);

impl Index {
    fn build(table: &[Rule]) -> Index {
        let mut m = HashMap::with_capacity(table.len());
        for &(name, cat) in table {
            m.entry(name).or_insert(cat);
        }
        Index(m)
    }
}

struct Indexes {
    any_component: Index,
    config_sub: Index,
    last_name: Index,
    etc: Index,
    /// Parents of [`PAIRS`].
    pair_parents: HashMap<&'static str, ()>,
}

fn indexes() -> &'static Indexes {
    static INDEXES: OnceLock<Indexes> = OnceLock::new();
    INDEXES.get_or_init(|| Indexes {
        any_component: Index::build(ANY_COMPONENT),
        config_sub: Index::build(CONFIG_SUB),
        last_name: Index::build(LAST_NAME),
        etc: Index::build(ETC),
        pair_parents: PAIRS.iter().map(|&(a, _, _)| (a, ())).collect(),
    })
}

/// The first rule of `table` that `c` matches: one hash lookup for a literal component, the
/// table scan (glob matching) for a pattern. An opaque component matches nothing either way.
fn find_rule(c: &Comp, table: &[Rule], index: &Index) -> Option<Category> {
    if c.pattern {
        table
            .iter()
            .find(|(name, _)| c.is(name))
            .map(|(_, cat)| *cat)
    } else {
        index.0.get(&*c.s).copied()
    }
}

/// The category of a normalised absolute path, if protected.
pub(super) fn categorize(comps: &[Comp]) -> Option<Category> {
    let ix = indexes();
    let n = comps.len();
    for (i, c) in comps.iter().enumerate() {
        if let Some(cat) = find_rule(c, ANY_COMPONENT, &ix.any_component) {
            return Some(cat);
        }
        let next = comps.get(i + 1);
        if let Some(next) = next {
            if c.is(".config") {
                if let Some(cat) = find_rule(next, CONFIG_SUB, &ix.config_sub) {
                    return Some(cat);
                }
            }
            // A literal parent that starts no pair cannot match any (all pairs are literal).
            if c.pattern || ix.pair_parents.contains_key(&*c.s) {
                if let Some((_, _, cat)) = PAIRS.iter().find(|(a, b, _)| c.is(a) && next.is(b)) {
                    return Some(*cat);
                }
            }
        }
        if i + 1 == n {
            if c.is(".git") {
                return Some(GitConfig);
            }
            if c.is_env_file() {
                return Some(Credentials);
            }
            if let Some(cat) = find_rule(c, LAST_NAME, &ix.last_name) {
                return Some(cat);
            }
        }
    }
    if n >= 2 && comps[0].is("etc") {
        if let Some(cat) = find_rule(&comps[1], ETC, &ix.etc) {
            return Some(cat);
        }
    }
    None
}
