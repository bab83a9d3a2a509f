//! What a resolved path may be used for: protected names and roots, agent-instruction globs,
//! the access verdict (read / write / list), and the places the user's git configuration
//! names or makes executable.

use super::commands::glob_comps;
use super::*;

impl<'a> Checker<'a> {
    pub(super) fn protected_hit(
        &self,
        comps: &[String],
        access: Access,
        what: &str,
    ) -> Option<Hit> {
        let verb = match access {
            Access::List => "lists",
            Access::Read | Access::ReadTree => "reads",
            Access::Write | Access::WriteTree => "writes",
        };
        let cat = if matches!(access, Access::Read | Access::ReadTree) && names::etc_private(comps)
        {
            // Secrets of the system (red-team R2), readable when OpenCode runs as root.
            Some(Category::Credentials)
        } else if self.roots.protected.iter().any(|p| starts_with(comps, p)) {
            Some(Category::BrokerState)
        } else if matches!(access, Access::Write | Access::WriteTree)
            && self.instruction_glob_hit(comps)
        {
            // Named by OpenCode's `instructions` (red-team R5).
            Some(Category::AgentInstructions)
        } else if self.git_named.iter().any(|p| starts_with(comps, p))
            || self
                .roots
                .git_protected
                .iter()
                .any(|p| starts_with(comps, p))
        {
            // Named by the user's git configuration: hooks, included files, programs.
            Some(Category::GitConfig)
        } else {
            categorize(&norm(comps))
        }?;
        // A `.git/config` may hold a token in a remote URL or an extraheader (red-team R3).
        let reads_ok = !matches!(cat, Category::Credentials | Category::BrokerState)
            && !is_git_config_file(&norm(comps));
        if matches!(access, Access::List)
            || (matches!(access, Access::Read | Access::ReadTree) && reads_ok)
        {
            return None;
        }
        let shown = self.display(comps);
        // A read left although its category protects writes only: `.git/config`, whose
        // contents may be a secret.
        let extra = if matches!(access, Access::Read | Access::ReadTree)
            && !matches!(cat, Category::Credentials | Category::BrokerState)
        {
            ", may hold credentials"
        } else {
            ""
        };
        let reason = format!("{what} {verb} {shown} ({}{extra})", cat.as_str());
        Some(GuardrailHit {
            category: cat,
            path: Some(shown),
            reason: if self.origin.is_empty() {
                reason
            } else {
                format!("{}: {reason}", self.origin)
            },
        })
    }

    /// Whether `comps` (absolute) is matched by one of the context's `instructions` globs.
    pub(super) fn instruction_glob_hit(&self, comps: &[String]) -> bool {
        if self.ctx.instruction_globs.is_empty() {
            return false;
        }
        let lower: Vec<String> = comps.iter().map(|c| c.to_lowercase()).collect();
        let path: Vec<&str> = lower.iter().map(String::as_str).collect();
        let mut bases: Vec<Vec<String>> = vec![self.ctx_worktree_lexical()];
        bases.extend(self.roots.worktree.clone());
        self.ctx.instruction_globs.iter().any(|g| {
            let g = g.to_lowercase();
            let (abs, rest) = if let Some(r) = g.strip_prefix("~/") {
                (Some(self.home.clone()), r.to_string())
            } else if g.starts_with('/') {
                (Some(Vec::new()), g.clone())
            } else {
                (None, g.clone())
            };
            let pat: Vec<&str> = rest
                .split('/')
                .filter(|c| !c.is_empty() && *c != ".")
                .collect();
            match abs {
                Some(prefix) => {
                    let prefix: Vec<String> = prefix.iter().map(|c| c.to_lowercase()).collect();
                    starts_with(&lower, &prefix) && glob_comps(&pat, &path[prefix.len()..])
                }
                None => bases.iter().any(|b| {
                    let b: Vec<String> = b.iter().map(|c| c.to_lowercase()).collect();
                    starts_with(&lower, &b)
                        && (b.len()..path.len()).any(|k| glob_comps(&pat, &path[k..]))
                }),
            }
        })
    }

    /// Judges one resolved (or, with `lexical_only`, lexical) path.
    pub(super) fn judge(
        &mut self,
        comps: &[String],
        node: Node,
        access: Access,
        what: &str,
        lexical_only: bool,
    ) -> Result<(), Hit> {
        if let Some(h) = self.protected_hit(comps, access, what) {
            return Err(h);
        }
        if lexical_only {
            return Ok(());
        }
        self.judge_use(comps, node, access, what)
    }

    /// [`Checker::judge`] after the protected names and roots ([`Checker::protected_hit`],
    /// a pure function of `comps`, `access` and `what`): for a path whose protected names
    /// were just judged with the same `access` and `what` (the kernel's resolution equal to
    /// the lexical form, the usual case).
    pub(super) fn judge_use(
        &mut self,
        comps: &[String],
        node: Node,
        access: Access,
        what: &str,
    ) -> Result<(), Hit> {
        let is_dev_null = comps.len() == 2 && comps[0] == "dev" && comps[1] == "null";
        if comps.first().is_some_and(|f| f == "dev") && !is_dev_null && access != Access::List {
            return Err(self.hit(format!("{what} device path {}", join(comps))));
        }
        // A device, FIFO or socket outside `/dev` (a chroot or image build tree's `dev/`, a
        // bind mount of `/dev` in the project): reading or writing it reads or writes the
        // device, wherever its name is (red team 4: `echo x > rootfs/dev/sda` was approved).
        if node == Node::Other && !is_dev_null && access != Access::List {
            return Err(self.hit(format!(
                "{what} {}: a device, FIFO or socket",
                self.display(comps)
            )));
        }
        // A file of procfs, sysfs, ... mounted outside `/proc` (`rootfs/proc/self/environ`
        // in a chroot build tree): a process's secrets or the kernel's settings (red team 4).
        if node != Node::Missing && !is_dev_null && access != Access::List {
            let dir = if node == Node::Dir {
                comps
            } else {
                &comps[..comps.len().saturating_sub(1)]
            };
            if self.fs.kernel_fs(Path::new(&join(dir))) {
                return Err(self.hit(format!(
                    "{what} {}: on a kernel interface file system (procfs, sysfs, ...)",
                    self.display(comps)
                )));
            }
        }
        if node == Node::MultiLinked && access != Access::List {
            return Err(self.hit(format!(
                "{what} {}: the file has other hard links",
                self.display(comps)
            )));
        }
        if matches!(access, Access::Read | Access::ReadTree) {
            // Under $HOME, outside the project, any file may hold a secret under a name no
            // table knows (G2 finding 6): not shown harmless.
            let under_home = starts_with(comps, &self.home)
                || self
                    .roots
                    .home
                    .as_ref()
                    .is_some_and(|h| starts_with(comps, h));
            let in_project = self.roots.write_roots.iter().any(|r| starts_with(comps, r));
            if under_home && !in_project {
                return Err(self.hit(format!(
                    "{what} reads {}: reads outside the project under $HOME are not shown harmless",
                    self.display(comps)
                )));
            }
            // Outside the project, only system locations are read (red-team R2: container
            // secrets in /run/secrets, /var/run/secrets, other users' homes, ...).
            if !in_project && !is_dev_null && !names::system_read(comps) {
                return Err(self.hit(format!(
                    "{what} reads {}: outside the project only {} are read",
                    self.display(comps),
                    names::SYSTEM_READ_DOC
                )));
            }
        }
        match access {
            Access::List => Ok(()),
            // A directory given to a reading program is read through (`diff -N DIR X` prints
            // every file of DIR): judged like a recursive read.
            Access::Read | Access::ReadTree => {
                if node == Node::Dir {
                    self.walk(comps, false, what)
                } else {
                    Ok(())
                }
            }
            Access::Write | Access::WriteTree => {
                if is_dev_null && access == Access::Write {
                    return Ok(());
                }
                self.wrote.push(self.simple_ix);
                if let Some(why) = &self.git_unknown {
                    return Err(self.hit(format!(
                        "{what} writes {}: {why} (a hook or included file may be named there)",
                        self.display(comps)
                    )));
                }
                let strict = access == Access::WriteTree;
                let inside = self
                    .roots
                    .write_roots
                    .iter()
                    .any(|r| starts_with(comps, r) && (!strict || comps.len() > r.len()));
                if !inside {
                    return Err(self.hit(format!(
                        "{what} writes {}: outside the project",
                        self.display(comps)
                    )));
                }
                if access == Access::WriteTree && node == Node::Dir {
                    self.walk(comps, true, what)?;
                }
                Ok(())
            }
        }
    }

    /// A recursive read passes through the git directory `dir`: its `config` and
    /// `config.worktree` must be readable and show no credential (a URL with a user part, an
    /// `extraheader`, a `[credential]` section, an include, words like token/password), and
    /// it must hold no `modules/` or `worktrees/` (more configuration files).
    pub(super) fn git_dir_clean(&mut self, dir: &[String], what: &str) -> Result<(), Hit> {
        for sub in ["modules", "worktrees"] {
            let mut p = dir.to_vec();
            p.push(sub.into());
            if self.lstat(&join(&p)) != Node::Missing {
                return Err(self.hit(format!(
                    "{what} reads {}: more git configuration files there may hold credentials",
                    self.display(&p)
                )));
            }
        }
        for f in ["config", "config.worktree"] {
            let mut p = dir.to_vec();
            p.push(f.into());
            let node = self.lstat(&join(&p));
            if node == Node::Missing {
                continue;
            }
            let clean = node == Node::File
                && self
                    .fs
                    .read_file(Path::new(&join(&p)))
                    .is_some_and(|t| !gitconfig::may_hold_credentials(&t));
            if !clean {
                return Err(GuardrailHit {
                    category: Category::Credentials,
                    path: Some(self.display(&p)),
                    reason: format!(
                        "{}{what} reads {}: git configuration that may hold credentials (a URL with a user part, an extraheader, an include)",
                        if self.origin.is_empty() { String::new() } else { format!("{}: ", self.origin) },
                        self.display(&p)
                    ),
                });
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Requests

    /// Reads the git configuration files (see [`git_named`]) and fills
    /// [`Checker::git_named`] / [`Checker::git_unknown`].
    pub(super) fn git_named_places(&mut self) {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let home = self.home.clone();
        let wt = self.ctx.worktree.to_str().map(|w| lexfold(&[], w));
        let mut files: Vec<(Vec<String>, usize)> = Vec::new();
        if let Some(wt) = &wt {
            let mut dot_git = wt.clone();
            dot_git.push(".git".into());
            let gitdir = match self.lstat(&join(&dot_git)) {
                Node::Dir => Some(dot_git),
                Node::Missing => None,
                Node::File | Node::MultiLinked | Node::Symlink => {
                    match self.fs.read_file(Path::new(&join(&dot_git))) {
                        Some(t) => t
                            .lines()
                            .find_map(|l| l.strip_prefix("gitdir:"))
                            .map(|g| lexfold(wt, g.trim())),
                        None => {
                            self.git_unknown = Some("cannot read the worktree's .git file".into());
                            None
                        }
                    }
                }
                _ => {
                    self.git_unknown = Some("cannot look at the worktree's .git".into());
                    None
                }
            };
            if let Some(gitdir) = gitdir {
                let mut cd = gitdir.clone();
                cd.push("commondir".into());
                let common = match self.lstat(&join(&cd)) {
                    Node::Missing | Node::Dir => gitdir.clone(),
                    _ => match self.fs.read_file(Path::new(&join(&cd))) {
                        Some(t) => lexfold(&gitdir, t.trim()),
                        None => {
                            self.git_unknown =
                                Some("cannot read the repository's commondir".into());
                            gitdir.clone()
                        }
                    },
                };
                let mut c = common;
                c.push("config".into());
                files.push((c, 0));
                let mut w = gitdir;
                w.push("config.worktree".into());
                files.push((w, 0));
            }
        }
        match env("GIT_CONFIG_GLOBAL") {
            Some(g) => files.push((lexfold(&home, &g), 0)),
            None => {
                let mut g = home.clone();
                g.push(".gitconfig".into());
                files.push((g, 0));
                let mut x = match env("XDG_CONFIG_HOME") {
                    Some(x) => lexfold(&home, &x),
                    None => {
                        let mut x = home.clone();
                        x.push(".config".into());
                        x
                    }
                };
                x.push("git".into());
                x.push("config".into());
                files.push((x, 0));
            }
        }
        if env("GIT_CONFIG_NOSYSTEM").is_none() {
            let sys = env("GIT_CONFIG_SYSTEM").unwrap_or_else(|| "/etc/gitconfig".into());
            files.push((lexfold(&[], &sys), 0));
        }
        if env("GIT_CONFIG_PARAMETERS").is_some() || env("GIT_CONFIG_COUNT").is_some() {
            self.git_unknown = Some("git configuration given in the environment".into());
        }
        let mut seen: Vec<Vec<String>> = Vec::new();
        while let Some((file, depth)) = files.pop() {
            if seen.contains(&file) || seen.len() > 64 {
                continue;
            }
            seen.push(file.clone());
            let text = match self.lstat(&join(&file)) {
                Node::Missing | Node::Dir => continue,
                Node::File | Node::MultiLinked | Node::Symlink => {
                    self.fs.read_file(Path::new(&join(&file)))
                }
                _ => None,
            };
            let Some(text) = text else {
                self.git_unknown = Some(format!(
                    "cannot read git configuration {}",
                    self.display(&file)
                ));
                continue;
            };
            let dir = file[..file.len().saturating_sub(1)].to_vec();
            for e in gitconfig::parse(&text) {
                for w in gitconfig::named_words(&e) {
                    let mut bases: Vec<Vec<String>> = vec![dir.clone()];
                    bases.extend(wt.clone());
                    for base in bases {
                        let lexical = match w.strip_prefix("~/") {
                            Some(rest) => lexfold(&home, rest),
                            None => lexfold(&base, &w),
                        };
                        let mut forms = vec![lexical.clone()];
                        if let Ok((p, _)) = self.resolve(&[], &join(&lexical), true) {
                            forms.push(p);
                        }
                        for p in forms {
                            // A name for the project itself (or above it): only a hooks
                            // directory there matters, and then no write is shown confined.
                            if self.roots.write_roots.iter().any(|r| starts_with(r, &p)) {
                                if e.key == "hookspath" {
                                    self.git_unknown = Some(format!(
                                        "core.hooksPath {w} is the project or above it"
                                    ));
                                }
                                continue;
                            }
                            if !self.git_named.contains(&p) {
                                self.git_named.push(p);
                            }
                        }
                    }
                    if gitconfig::is_include(&e) && depth < gitconfig::MAX_INCLUDE_DEPTH {
                        let inc = match w.strip_prefix("~/") {
                            Some(rest) => lexfold(&home, rest),
                            None => lexfold(&dir, &w),
                        };
                        files.push((inc, depth + 1));
                    }
                }
            }
        }
    }

    /// git's configuration, scanned once per context by [`check`].
    pub(super) fn git_scan(&self) -> gitconfig::Scan {
        match self.ctx.git_verdict.get().filter(|_| self.cache) {
            Some(v) => v.clone(),
            None => {
                let v = gitconfig::scan(&self.ctx.home, &self.ctx.worktree);
                if self.cache {
                    let _ = self.ctx.git_verdict.set(v.clone());
                }
                v
            }
        }
    }
}
