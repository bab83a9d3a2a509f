//! Protected names: the tables of what the guardrail protects, component normalisation, and
//! [`categorize`], which maps a normalised absolute path to its [`Category`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;

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
    // Everything in a `.git` directory is git configuration or state git obeys (`commondir`,
    // `config.worktree`, `gitdir`, `info/`, `modules/*/config`, `objects/info/alternates`,
    // `packed-refs`, `HEAD`, `index`, ...): never written; reads stay allowed.
    (".git", GitConfig),
    ("keyrings", Credentials),
    (".codex", Credentials),
    (".gemini", Credentials),
    (".terraform.d", Credentials),
    (".mozilla", Credentials),
    ("google-chrome", Credentials),
    ("chromium", Credentials),
    // VS Code tasks can run on folder open; devcontainers run commands on open.
    (".vscode", Scheduling),
    (".devcontainer", Scheduling),
    (".bashrc.d", ShellStartup),
    // Agent instructions and settings other coding agents read without the user's say
    // (Cursor, Gemini CLI, Codex CLI, Continue, Cline, Windsurf; MCP servers are commands).
    (".cursor", AgentInstructions),
    (".continue", AgentInstructions),
    (".clinerules", AgentInstructions),
    (".windsurf", AgentInstructions),
    (".cursorrules", AgentInstructions),
    (".windsurfrules", AgentInstructions),
    (".roo", AgentInstructions),
    (".roorules", AgentInstructions),
    (".kiro", AgentInstructions),
    (".junie", AgentInstructions),
    (".amazonq", AgentInstructions),
    (".goosehints", AgentInstructions),
    // OpenCode's skill loader scans `.agents/skills/**/SKILL.md` (besides `.claude`,
    // `.opencode`): red-team R5.
    (".agents", AgentInstructions),
    // Tool configuration that runs code without the user's say: CI (on the next push, with
    // the repository's secrets), IDE run configurations and tasks.
    (".circleci", Scheduling),
    (".idea", Scheduling),
    (".zed", Scheduling),
    (".buildkite", Scheduling),
    (".woodpecker", Scheduling),
    (".gitlab", Scheduling),
    (".mise", Scheduling),
    (".zshrc.d", ShellStartup),
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
    ("pip", Credentials),
    ("github-copilot", Credentials),
    ("rclone", Credentials),
    ("containers", Credentials),
    ("gh", Credentials),
    ("gcloud", Credentials),
    ("hub", Credentials),
    ("mise", Scheduling),
];

/// File names protected wherever they are (last component).
const LAST_NAME: &[Rule] = &[
    ("opencode.json", PermissionConfig),
    ("opencode.jsonc", PermissionConfig),
    (".claude.json", PermissionConfig),
    ("agents.md", AgentInstructions),
    ("claude.md", AgentInstructions),
    ("claude.local.md", AgentInstructions),
    ("agents.override.md", AgentInstructions),
    ("gemini.md", AgentInstructions),
    ("qwen.md", AgentInstructions),
    ("agent.md", AgentInstructions),
    // OpenCode loads the first of AGENTS.md, CLAUDE.md, CONTEXT.md as the system prompt
    // (`Instruction.systemPaths`, 1.18.33): red-team R5.
    ("context.md", AgentInstructions),
    (".aider.conf.yml", AgentInstructions),
    (".mcp.json", AgentInstructions),
    // Git hook managers: their configuration is the hooks.
    (".pre-commit-config.yaml", GitConfig),
    // Git configuration kept in the working tree: `.gitattributes` routes files through
    // diff/filter drivers (red-team R4), `.gitmodules` names URLs and update commands,
    // `.lfsconfig` is read by git-lfs like a config file.
    (".gitattributes", GitConfig),
    (".gitmodules", GitConfig),
    (".lfsconfig", GitConfig),
    ("lefthook.yml", GitConfig),
    ("lefthook.yaml", GitConfig),
    (".lefthook.yml", GitConfig),
    (".lefthook.yaml", GitConfig),
    ("lefthook-local.yml", GitConfig),
    // Tool configuration that runs code: CI, version managers' hooks and tasks.
    (".gitlab-ci.yml", Scheduling),
    (".travis.yml", Scheduling),
    ("jenkinsfile", Scheduling),
    ("azure-pipelines.yml", Scheduling),
    ("bitbucket-pipelines.yml", Scheduling),
    (".drone.yml", Scheduling),
    (".woodpecker.yml", Scheduling),
    // rustup runs the toolchain a `path` names; pnpm runs `.pnpmfile.cjs` on install.
    ("rust-toolchain", Scheduling),
    ("rust-toolchain.toml", Scheduling),
    (".pnpmfile.cjs", Scheduling),
    (".mise.toml", Scheduling),
    ("mise.toml", Scheduling),
    (".mise.local.toml", Scheduling),
    ("mise.local.toml", Scheduling),
    (".tool-versions", Scheduling),
    (".env", Credentials),
    (".npmrc", Credentials),
    (".netrc", Credentials),
    (".pypirc", Credentials),
    (".git-credentials", Credentials),
    (".pgpass", Credentials),
    (".my.cnf", Credentials),
    (".vault-token", Credentials),
    (".credentials.json", Credentials),
    (".s3cfg", Credentials),
    ("credentials.json", Credentials),
    ("credentials", Credentials),
    ("auth.json", Credentials),
    // OpenCode's MCP OAuth store (red-team R2).
    ("mcp-auth.json", Credentials),
    // Shell and REPL histories hold pasted secrets.
    (".bash_history", Credentials),
    (".zsh_history", Credentials),
    (".python_history", Credentials),
    (".psql_history", Credentials),
    (".mysql_history", Credentials),
    (".node_repl_history", Credentials),
    (".yarnrc", Credentials),
    (".yarnrc.yml", Credentials),
    ("pip.conf", Credentials),
    ("oauth_creds.json", Credentials),
    ("rclone.conf", Credentials),
    ("credentials.tfrc.json", Credentials),
    (".s3cfg", Credentials),
    (".boto", Credentials),
    (".histfile", Credentials),
    (".bunfig.toml", Credentials),
    ("bunfig.toml", Credentials),
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
    (".m2", "settings.xml", Credentials),
    ("opencode", "auth.json", Credentials),
    ("github-copilot", "hosts.json", Credentials),
    ("github-copilot", "apps.json", Credentials),
    (".m2", "settings.xml", Credentials),
    (".m2", "settings-security.xml", Credentials),
    (".gradle", "gradle.properties", Credentials),
    // Cargo runs `build.rustc-wrapper`, target runners, aliases from its config.
    (".cargo", "config", Scheduling),
    (".cargo", "config.toml", Scheduling),
    // CI workflows; Copilot's repository instructions.
    (".github", "workflows", Scheduling),
    (".github", "copilot-instructions.md", AgentInstructions),
    (".github", "instructions", AgentInstructions),
    (".github", "prompts", AgentInstructions),
    (".github", "chatmodes", AgentInstructions),
    (".github", "agents", AgentInstructions),
    (".github", "actions", Scheduling),
    ("spool", "cron", Scheduling),
    // ~/.local/share/systemd/user: systemd user units.
    ("share", "systemd", Scheduling),
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

/// One normalised path component.
pub(super) struct Comp<'a> {
    pub(super) s: Cow<'a, str>,
}

/// Normalises one component: NFKC, invisible characters (zero-width, bidi, soft hyphen,
/// controls) removed, lowercase.
pub(super) fn norm_comp(raw: &str) -> Comp<'_> {
    if raw.is_ascii() {
        // ASCII is NFKC-stable and its only invisible characters are the controls (C0 and
        // DEL); lowercasing is the ASCII one. Already normalised (the usual case): borrowed.
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
        return Comp { s };
    }
    let s: String = raw
        .nfkc()
        .filter(|&c| !crate::envelope::needs_escape(c))
        .flat_map(char::to_lowercase)
        .collect();
    Comp { s: Cow::Owned(s) }
}

impl Comp<'_> {
    fn is(&self, name: &str) -> bool {
        *self.s == *name
    }
    fn is_env_file(&self) -> bool {
        *self.s == *".env" || self.s.starts_with(".env.")
    }
    /// Shell and REPL histories (`.bash_history`, `.zsh_history`, `.psql_history`,
    /// `.python_history`, fish's `fish_history`, ...): pasted tokens.
    fn is_history(&self) -> bool {
        self.s.ends_with("_history")
    }
    /// Names that say "secret" (red-team R2): `*.key`, `*.pem`, `*token*`, `*secret*`.
    fn is_secret_name(&self) -> bool {
        self.s.ends_with(".key")
            || self.s.ends_with(".pem")
            || self.s.contains("token")
            || self.s.contains("secret")
    }
    /// A git configuration file inside a `.git` directory (`config`, `config.worktree`): it
    /// may carry a remote URL with a token or an `http.*.extraheader` (red-team R3).
    fn is_git_config_file(&self) -> bool {
        *self.s == *"config" || *self.s == *"config.worktree"
    }
}

/// FNV-1a, for the fixed name tables below: nothing is inserted after start-up, so a keyed
/// hash (SipHash, the default) buys no protection here, and it was a sixth of an edit check's
/// instructions (issue 16). The answer of a lookup does not depend on the hash function.
#[derive(Debug, Default, Clone, Copy)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0100_0000_01b3;
        let mut h = if self.0 == 0 { OFFSET } else { self.0 };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
        self.0 = h;
    }
}

type FnvMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// A literal-name index of one table: the first rule of each name (as a scan finds it).
struct Index(FnvMap<&'static str, Category>);

impl Index {
    fn build(table: &[Rule]) -> Index {
        let mut m = FnvMap::with_capacity_and_hasher(table.len(), Default::default());
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
    pair_parents: FnvMap<&'static str, ()>,
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

/// The rule of a table that `c` matches: one hash lookup.
fn find_rule(c: &Comp, index: &Index) -> Option<Category> {
    index.0.get(&*c.s).copied()
}

/// The category of a normalised absolute path, if protected. When several rules match,
/// credentials and broker state win (they also protect reads): `~/.claude/.credentials.json`
/// is credentials although `.claude/` is permission configuration.
/// Whether a normalised path is a configuration file inside a `.git` directory
/// (`.git/config`, `.git/worktrees/x/config.worktree`, `.git/modules/m/config`): it may carry a
/// remote URL with a token or an `http.*.extraheader` (red-team R3), so its contents are
/// never read, although its category stays git configuration.
pub(super) fn is_git_config_file(comps: &[Comp]) -> bool {
    comps.last().is_some_and(|l| l.is_git_config_file())
        && comps[..comps.len() - 1].iter().any(|c| c.is(".git"))
}

pub(super) fn categorize(comps: &[Comp]) -> Option<Category> {
    let first = categorize_first(comps)?;
    if matches!(first, Credentials | BrokerState) {
        return Some(first);
    }
    // A read-protecting rule further down the path wins.
    for k in 1..comps.len() {
        if let Some(c @ (Credentials | BrokerState)) = categorize_first(&comps[k..]) {
            return Some(c);
        }
    }
    Some(first)
}

fn categorize_first(comps: &[Comp]) -> Option<Category> {
    let ix = indexes();
    let n = comps.len();
    for (i, c) in comps.iter().enumerate() {
        if let Some(cat) = find_rule(c, &ix.any_component) {
            return Some(cat);
        }
        let next = comps.get(i + 1);
        if let Some(next) = next {
            if c.is(".config") {
                if let Some(cat) = find_rule(next, &ix.config_sub) {
                    return Some(cat);
                }
            }
            // A literal parent that starts no pair cannot match any (all pairs are literal).
            if ix.pair_parents.contains_key(&*c.s) {
                if let Some((_, _, cat)) = PAIRS.iter().find(|(a, b, _)| c.is(a) && next.is(b)) {
                    return Some(*cat);
                }
            }
        }
        if i + 1 == n {
            if c.is(".git") {
                return Some(GitConfig);
            }
            if c.is_env_file() || c.is_history() || c.is_secret_name() {
                return Some(Credentials);
            }
            if let Some(cat) = find_rule(c, &ix.last_name) {
                return Some(cat);
            }
        }
    }
    if n >= 2 && comps[0].is("etc") {
        if let Some(cat) = find_rule(&comps[1], &ix.etc) {
            return Some(cat);
        }
    }
    None
}

/// The protected names as Markdown, one row per category (the generated block of SECURITY.md).
pub(super) fn markdown() -> String {
    let cats = [
        PermissionConfig,
        AgentInstructions,
        Credentials,
        ShellStartup,
        GitConfig,
        Scheduling,
        Privilege,
        BrokerState,
    ];
    let mut s = String::from(
        "`name/`: a path component with that name, and everything below it; `a/b`: `b` \
         directly in an `a`, and everything below it; `name`: the last component.\n\n\
         | category | protected names |\n|---|---|\n",
    );
    for cat in cats {
        let mut names: Vec<String> = Vec::new();
        names.extend(
            ANY_COMPONENT
                .iter()
                .filter(|r| r.1 == cat)
                .map(|r| format!("`{}/`", r.0)),
        );
        names.extend(
            CONFIG_SUB
                .iter()
                .filter(|r| r.1 == cat)
                .map(|r| format!("`.config/{}/`", r.0)),
        );
        names.extend(
            PAIRS
                .iter()
                .filter(|r| r.2 == cat)
                .map(|r| format!("`{}/{}`", r.0, r.1)),
        );
        names.extend(
            LAST_NAME
                .iter()
                .filter(|r| r.1 == cat)
                .map(|r| format!("`{}`", r.0)),
        );
        if cat == Credentials {
            names.extend([
                "`.env.*`".into(),
                "`*_history`".into(),
                "`*.key`".into(),
                "`*.pem`".into(),
                "`*token*`".into(),
                "`*secret*`".into(),
            ]);
        }
        names.extend(
            ETC.iter()
                .filter(|r| r.1 == cat)
                .map(|r| format!("`/etc/{}`", r.0)),
        );
        s.push_str(&format!("| {} | {} |\n", cat.as_str(), names.join(" ")));
    }
    s
}

/// Top-level directories whose files a peer-triggered request may read outside the project
/// (red-team R2: reads fail closed; [`etc_private`] is excluded from `/etc`).
const SYSTEM_READ: &[&str] = &["usr", "etc", "bin", "sbin", "lib", "lib32", "lib64"];

/// [`SYSTEM_READ`] for reasons and SECURITY.md.
pub(super) const SYSTEM_READ_DOC: &str = "/usr, /etc (not its private files), /bin, /sbin, /lib*";

/// Whether an absolute physical path (components) lies in a system location reads outside
/// the project are allowed from ([`SYSTEM_READ`]).
pub(super) fn system_read(comps: &[String]) -> bool {
    comps
        .first()
        .is_some_and(|c| SYSTEM_READ.contains(&c.as_str()))
}

/// Entries of `/etc` that hold system secrets (readable when OpenCode runs as root, as in
/// devcontainers): never read by a peer-triggered request.
const ETC_PRIVATE: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "ssh",
    "ssl",
    "pki",
    "letsencrypt",
    "wireguard",
    "networkmanager",
    "ipsec.secrets",
    "ipsec.d",
    "ppp",
    "openvpn",
    "krb5.keytab",
    "security",
    "credstore",
    "credstore.encrypted",
    "sssd",
    "samba",
    "docker",
    "containers",
    "rancher",
    "kubernetes",
    "machine-id",
];

/// Whether an absolute path is one of `/etc`'s private entries ([`ETC_PRIVATE`]) or below it.
/// `/etc/ssl/certs` is public but is left too (fail closed: `/etc/ssl/private` is its sibling).
pub(super) fn etc_private(comps: &[String]) -> bool {
    comps.len() >= 2 && comps[0] == "etc" && ETC_PRIVATE.contains(&&*norm_comp(&comps[1]).s)
}
