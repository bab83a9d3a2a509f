//! Path resolution for the guardrail: component by component like the kernel (symlink
//! chains, dangling links, `..` after resolution), through [`FsProbe`] only, and the bounded
//! walks of recursive reads.

use super::*;

impl<'a> Checker<'a> {
    pub(super) fn lstat(&self, p: &str) -> Node {
        if let Some(n) = self.lstat_memo.borrow().get(p) {
            return *n;
        }
        if let Some(n) = self.plain_known(p) {
            return n;
        }
        let n = self.fs.lstat(Path::new(p));
        self.lstat_memo.borrow_mut().insert(p.to_string(), n);
        n
    }

    /// What a path [`FsProbe::lstat_plain`] answered in this check says of `p`: its answer
    /// for `p` itself, [`Node::Dir`] for a proper prefix of it.
    fn plain_known(&self, p: &str) -> Option<Node> {
        for (q, n) in self.plain_memo.borrow().iter() {
            if q.len() == p.len() && q == p {
                return Some(*n);
            }
            if q.len() > p.len() && q.as_bytes()[p.len()] == b'/' && q.starts_with(p) {
                return Some(Node::Dir);
            }
        }
        None
    }

    /// Before `lstat` of `here` (not known yet) in [`Checker::resolve`]: one
    /// [`FsProbe::lstat_plain`] of `here` and the plain components still to walk (up to the
    /// first `..`), whose answer then serves the `lstat` of each of them. When it does not
    /// answer, nothing is kept and every component is looked at on its own. Returns whether
    /// it looked (`false`: `here` was known already).
    fn look_ahead<'q>(&self, here: &str, queue: impl Iterator<Item = &'q str>) -> bool {
        if self.lstat_memo.borrow().contains_key(here) || self.plain_known(here).is_some() {
            return false;
        }
        let mut full = String::with_capacity(here.len() + 64);
        full.push_str(here);
        let mut stretch = 1;
        for c in queue {
            match c {
                "" | "." => continue,
                ".." => break,
                c => {
                    full.push('/');
                    full.push_str(c);
                    stretch += 1;
                }
            }
        }
        // One look costs three system calls (`openat2`, `fstat`, `close`): for fewer
        // components than that, `lstat` each.
        if stretch < LOOK_AHEAD_MIN {
            return true;
        }
        if let Some(n) = self.fs.lstat_plain(Path::new(&full)) {
            self.plain_memo.borrow_mut().push((full, n));
        }
        true
    }

    pub(super) fn read_link(&self, p: &str) -> Option<PathBuf> {
        if let Some(t) = self.link_memo.borrow().get(p) {
            return t.clone();
        }
        let t = self.fs.read_link(Path::new(p));
        self.link_memo.borrow_mut().insert(p.to_string(), t.clone());
        t
    }

    pub(super) fn phys_abs(&self, p: &Path) -> Option<Vec<String>> {
        let s = p.to_str()?;
        if !s.starts_with('/') {
            return None;
        }
        self.resolve(&[], s, true).ok().map(|r| r.0)
    }

    pub(super) fn display(&self, comps: &[String]) -> String {
        let s = join(comps);
        if !self.home_str.is_empty() {
            if let Some(rest) = s.strip_prefix(&self.home_str) {
                if rest.is_empty() || rest.starts_with('/') {
                    return format!("~{rest}");
                }
            }
        }
        s
    }

    /// Physical resolution of `raw` from `base` (physical components). Returns the components
    /// and what is there (`Missing` when some component does not exist yet).
    pub(super) fn resolve(
        &self,
        base: &[String],
        raw: &str,
        follow_last: bool,
    ) -> Result<(Vec<String>, Node), String> {
        if raw.is_empty() {
            return Err("empty path".into());
        }
        let mut stack: Vec<String> = if raw.starts_with('/') {
            Vec::new()
        } else {
            base.to_vec()
        };
        // Components still to walk: borrowed from `raw`, owned when a link target is spliced in.
        let mut queue: std::collections::VecDeque<std::borrow::Cow<'_, str>> =
            raw.split('/').map(std::borrow::Cow::Borrowed).collect();
        // `join(&stack)`, kept in step with `stack` (no string built per component).
        let mut here = if stack.is_empty() {
            String::new()
        } else {
            join(&stack)
        };
        // A trailing `/` (or `/.`) makes the kernel follow a final symlink (`rm -r link/`
        // empties the target).
        let follow_last = follow_last || raw.ends_with('/') || raw.ends_with("/.");
        let mut links = 0usize;
        let mut exists = true;
        let mut last = Node::Dir;
        // One look ahead (`look_ahead`) per stretch of plain components: at the first
        // component not known yet, and again after each symlink's target is spliced in.
        let mut ahead = true;
        while let Some(c) = queue.pop_front() {
            match &*c {
                "" | "." => continue,
                ".." => {
                    // A component that does not exist yet may be created (by the tool, or an
                    // earlier command) and be resolved physically before this `..`: unknown.
                    if !exists {
                        return Err(format!(
                            "`..` after {}, which does not exist yet",
                            self.display(&stack)
                        ));
                    }
                    if stack.pop().is_some() {
                        pop_comp(&mut here);
                    }
                    continue;
                }
                _ => {}
            }
            if stack.first().is_some_and(|f| f == "proc") {
                return Err("path through /proc".into());
            }
            here.push('/');
            here.push_str(&c);
            stack.push(c.into_owned());
            if !exists {
                last = Node::Missing;
                continue;
            }
            // A trailing `/` or `/.` makes the kernel (and `rm`, `mv`, ...) follow a symlink
            // in the last component: only a bare last component is not followed.
            let is_last = queue.is_empty();
            if ahead && self.look_ahead(&here, queue.iter().map(|c| &**c)) {
                ahead = false;
            }
            match self.lstat(&here) {
                Node::Missing => {
                    exists = false;
                    last = Node::Missing;
                }
                Node::Unknown => return Err(format!("cannot look at {}", self.display(&stack))),
                Node::Symlink if !is_last || follow_last => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err("too many levels of symbolic links".into());
                    }
                    // A link of procfs mounted outside `/proc` (`rootfs/proc/self`, `.../fd/0`,
                    // `.../cwd`): the kernel follows it for the process that runs the command,
                    // not by its text (red team 4).
                    let parent = &here[..here.rfind('/').unwrap_or(0)];
                    if self
                        .fs
                        .kernel_fs(Path::new(if parent.is_empty() { "/" } else { parent }))
                    {
                        return Err(format!(
                            "{} is a link on a kernel interface file system (procfs, ...)",
                            self.display(&stack)
                        ));
                    }
                    let Some(target) = self.read_link(&here) else {
                        return Err(format!("cannot read link {}", self.display(&stack)));
                    };
                    let Some(t) = target.to_str() else {
                        return Err("non-UTF-8 link target".into());
                    };
                    if t.is_empty() {
                        return Err("empty link target".into());
                    }
                    stack.pop();
                    pop_comp(&mut here);
                    if t.starts_with('/') {
                        stack.clear();
                        here.clear();
                    }
                    for (k, part) in t.split('/').enumerate() {
                        queue.insert(k, std::borrow::Cow::Owned(part.to_string()));
                    }
                    ahead = true;
                }
                n => last = n,
            }
        }
        if stack.first().is_some_and(|f| f == "proc") {
            return Err("path through /proc".into());
        }
        Ok((stack, last))
    }

    /// Checks one path used with `access` from every possible working directory; returns the
    /// physical resolutions (from each cwd).
    pub(super) fn path(
        &mut self,
        raw: &str,
        access: Access,
        follow_last: bool,
        what: &str,
    ) -> Result<Vec<(Vec<String>, Node)>, Hit> {
        // Borrowed out of `self` for the loop (`path_from` reads no working directory but the
        // one it is given) and put back after, also on error: no copy per path.
        let cwds = std::mem::take(&mut self.cwds);
        let mut out = Vec::new();
        let mut failed = None;
        for cwd in &cwds {
            match self.path_from(cwd, raw, access, follow_last, what) {
                Ok(r) => {
                    if !out.contains(&r) {
                        out.push(r);
                    }
                }
                Err(h) => {
                    failed = Some(h);
                    break;
                }
            }
        }
        self.cwds = cwds;
        match failed {
            Some(h) => Err(h),
            None => Ok(out),
        }
    }

    pub(super) fn path_from(
        &mut self,
        cwd: &Cwd,
        raw: &str,
        access: Access,
        follow_last: bool,
        what: &str,
    ) -> Result<(Vec<String>, Node), Hit> {
        let lexical = lexfold(&cwd.logical, raw);
        let kernel = self
            .resolve(&cwd.physical, raw, follow_last)
            .map_err(|e| self.hit(format!("{what} {raw}: {e}")))?;
        // The views judged: the kernel's resolution, then the lexically folded one when it
        // differs (borrowed, not copied).
        let mut folded = None;
        if raw.contains("..") || cwd.logical != cwd.physical {
            let f = self
                .resolve(&[], &join(&lexical), follow_last)
                .map_err(|e| self.hit(format!("{what} {raw}: {e}")))?;
            if f != kernel {
                folded = Some(f);
            }
        }
        // Belt and braces: the lexical form names no protected place either.
        self.judge(&lexical, Node::Missing, access, what, true)?;
        for (comps, node) in std::iter::once(&kernel).chain(folded.as_ref()) {
            if self.tainted.iter().any(|t| starts_with(comps, t)) {
                return Err(self.hit(format!(
                    "{what} {}: created or replaced by cp/mv earlier in the command",
                    self.display(comps)
                )));
            }
            if *comps == lexical {
                // Its protected names were judged just above (the lexical form, same access).
                self.judge_use(comps, *node, access, what)?;
            } else {
                self.judge(comps, *node, access, what, false)?;
            }
        }
        Ok(kernel)
    }

    /// Walks the tree at `root` (not following symlinks, bounded) and fails on any protected
    /// name (`write`) or any credentials / broker state (read).
    pub(super) fn walk(&mut self, root: &[String], write: bool, what: &str) -> Result<(), Hit> {
        let access = if write {
            Access::WriteTree
        } else {
            Access::ReadTree
        };
        let mut stack: Vec<(Vec<String>, usize)> = vec![(root.to_vec(), 0)];
        let mut seen = 0usize;
        // Symlinks met, judged after the tree (whose protected names come first).
        let mut links: Vec<Vec<String>> = Vec::new();
        while let Some((dir, depth)) = stack.pop() {
            // A kernel interface file system mounted in the tree (`rootfs/proc`): its files
            // are processes' secrets and the kernel's settings (red team 4).
            if self.fs.kernel_fs(Path::new(&join(&dir))) {
                return Err(self.hit(format!(
                    "{what} {}: on a kernel interface file system (procfs, sysfs, ...)",
                    self.display(&dir)
                )));
            }
            let Some(entries) = self.fs.read_dir(Path::new(&join(&dir))) else {
                return Err(self.hit(format!(
                    "{what} {}: cannot read the directory",
                    self.display(&dir)
                )));
            };
            for (name, node) in entries {
                seen += 1;
                if seen > WALK_MAX {
                    return Err(self.hit(format!(
                        "{what} {}: more than {WALK_MAX} entries to check",
                        self.display(root)
                    )));
                }
                let Some(name) = name.to_str() else {
                    return Err(self.hit(format!(
                        "{what}: non-UTF-8 name under {}",
                        self.display(&dir)
                    )));
                };
                let mut p = dir.clone();
                p.push(name.to_string());
                if let Some(h) = self.protected_hit(&p, access, what) {
                    return Err(h);
                }
                if node == Node::Unknown {
                    return Err(self.hit(format!("{what}: cannot look at {}", self.display(&p))));
                }
                // A read walk skips `.git` (objects, not credentials) once its configuration is
                // shown to hold none (`grep -r` reads `.git/config`: red-team R3); a write walk
                // never gets there (`.git` is protected).
                if node == Node::Dir && !write && name == ".git" {
                    self.git_dir_clean(&p, what)?;
                }
                // A symlink met in a read walk: the reader may follow it (`grep -R`, `rg -L`,
                // OpenCode's grep tool; red-team R6). Its target is judged like a read: a
                // directory outside the walked tree, or a target that cannot be resolved, is
                // left.
                if node == Node::Symlink && !write {
                    links.push(p.clone());
                }
                if node == Node::Dir && (write || name != ".git") {
                    if depth + 1 > WALK_DEPTH {
                        return Err(
                            self.hit(format!("{what} {}: tree too deep", self.display(root)))
                        );
                    }
                    stack.push((p, depth + 1));
                }
            }
        }
        for link in links {
            self.walk_link(root, &link, what)?;
        }
        Ok(())
    }

    /// A read walk of `root` meets the symlink `link`: its target must be a permitted read and,
    /// if a directory, lie inside `root` (walked anyway); otherwise the walk is left.
    pub(super) fn walk_link(
        &mut self,
        root: &[String],
        link: &[String],
        what: &str,
    ) -> Result<(), Hit> {
        let shown = self.display(link);
        let (target, node) = self
            .resolve(&[], &join(link), true)
            .map_err(|e| self.hit(format!("{what} {shown}: symlink in the tree: {e}")))?;
        if let Some(h) = self.protected_hit(&target, Access::Read, what) {
            return Err(h);
        }
        match node {
            Node::Missing => Ok(()),
            Node::Dir if starts_with(&target, root) => Ok(()),
            Node::Dir => Err(self.hit(format!(
                "{what} {shown}: a symlink in the tree leads to the directory {} outside it",
                self.display(&target)
            ))),
            node => self.judge(&target, node, Access::Read, what, false),
        }
    }
}

/// The fewest components not known yet for which [`Checker::resolve`] asks
/// [`FsProbe::lstat_plain`] once instead of `lstat` per component.
const LOOK_AHEAD_MIN: usize = 3;

/// Drop the last `/component` of a path built by `resolve` (`"/a/b"` → `"/a"`, `"/a"` → `""`).
fn pop_comp(here: &mut String) {
    let cut = here.rfind('/').unwrap_or(0);
    here.truncate(cut);
}
