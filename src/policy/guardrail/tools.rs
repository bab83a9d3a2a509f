//! OpenCode's permission requests, tool by tool: which fields name paths or commands, and
//! how each is judged (edit / write / patch / read / list / glob / grep / bash).

use super::*;

/// Every key of the tool's raw arguments ([`PermissionRequest::args`]) the guardrail reads.
/// A caller may pass only these (the napi layer copies nothing else out of JavaScript, so a
/// `write`'s file content or an edit's strings are never converted); every read below goes
/// through the private `arg` helper, which asserts (in debug builds and tests) that its key is listed here.
pub const TOOL_ARG_KEYS: &[&str] = &[
    "command",
    "workdir",
    "filePath",
    "filepath",
    "path",
    "patchText",
    "patch_text",
    "patch",
    "input",
];

/// `args[key]`, for a key of [`TOOL_ARG_KEYS`].
fn arg<'v>(args: &'v serde_json::Value, key: &str) -> Option<&'v serde_json::Value> {
    debug_assert!(
        TOOL_ARG_KEYS.contains(&key),
        "tool argument {key:?} is read but not in TOOL_ARG_KEYS"
    );
    args.get(key)
}

impl<'a> Checker<'a> {
    pub(super) fn request(&mut self, req: &PermissionRequest) -> Result<(), Hit> {
        let kind = req.permission.as_str();
        let args = &req.args;
        let arg_str = |k: &str| arg(args, k).and_then(|v| v.as_str());
        let start = match &self.roots.session {
            Some(s) => s.clone(),
            None => self.start_cwd(None)?,
        };
        self.cwds = vec![start];
        match kind {
            "bash" => {
                let mut cmds: Vec<&str> = Vec::new();
                cmds.extend(req.command.as_deref());
                cmds.extend(arg_str("command"));
                if arg(args, "command").is_some_and(|c| !c.is_string()) {
                    return Err(unproven("bash: the command argument is not a string"));
                }
                let patterns: Vec<&str> = req
                    .patterns
                    .iter()
                    .chain(&req.resources)
                    .map(String::as_str)
                    .collect();
                if cmds.is_empty() && patterns.is_empty() {
                    return Err(unproven("bash: no command to analyse"));
                }
                let workdir = match arg(args, "workdir") {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::String(w)) => Some(w.as_str()),
                    Some(_) => return Err(unproven("bash: workdir is not a string")),
                };
                let start = match (workdir, &self.roots.session) {
                    (None, Some(s)) => s.clone(),
                    _ => self.start_cwd(workdir)?,
                };
                let mut done: Vec<&str> = Vec::new();
                self.origin = "bash";
                for cmd in cmds {
                    if !done.contains(&cmd) {
                        done.push(cmd);
                        self.command(cmd, &start)?;
                    }
                }
                // OpenCode's patterns are its own parser's simple commands: one that is the
                // text (or a leading part) of a simple command analysed above is covered;
                // any other is analysed on its own (it may be a command our parse did not see).
                for p in patterns {
                    let p = p.trim_end_matches('*').trim_end();
                    let covered = self.covered.iter().any(|c| {
                        c == p || (c.starts_with(p) && c[p.len()..].starts_with([' ', '\t']))
                    });
                    if !covered && !done.contains(&p) {
                        done.push(p);
                        self.command(p, &start)?;
                    }
                }
                Ok(())
            }
            "edit" | "write" | "multiedit" | "patch" | "apply_patch" => {
                self.origin = "edit";
                let mut n = 0;
                for p in req
                    .filepath
                    .iter()
                    .map(String::as_str)
                    .chain(arg_str("filePath"))
                    .chain(arg_str("filepath"))
                    .chain(arg_str("path"))
                {
                    n += 1;
                    self.tool_path(p, Access::Write, false)?;
                }
                for p in req.patterns.iter().chain(&req.resources) {
                    n += 1;
                    self.tool_path(p, Access::Write, true)?;
                }
                for key in ["patchText", "patch_text", "patch", "input"] {
                    if let Some(text) = arg_str(key) {
                        let paths = patch_paths(text).map_err(unproven)?;
                        if paths.is_empty() {
                            return Err(unproven("patch: no file header found"));
                        }
                        for p in paths {
                            n += 1;
                            self.tool_path(p, Access::Write, false)?;
                        }
                    }
                }
                if n == 0 {
                    return Err(unproven(format!("{kind}: no path to check")));
                }
                Ok(())
            }
            "read" => {
                self.origin = "read";
                let mut n = 0;
                for p in req
                    .filepath
                    .iter()
                    .map(String::as_str)
                    .chain(arg_str("filePath"))
                    .chain(arg_str("path"))
                {
                    n += 1;
                    self.tool_path(p, Access::Read, false)?;
                }
                for p in req.patterns.iter().chain(&req.resources) {
                    n += 1;
                    self.tool_path(p, Access::Read, true)?;
                }
                if n == 0 {
                    return Err(unproven("read: no path to check"));
                }
                Ok(())
            }
            "list" | "glob" | "grep" => {
                self.origin = if kind == "grep" { "grep" } else { "list" };
                let access = if kind == "grep" {
                    Access::ReadTree
                } else {
                    Access::List
                };
                match arg_str("path") {
                    Some(p) => self.tool_path(p, access, false),
                    None => {
                        if arg(args, "path").is_some_and(|v| !v.is_null()) {
                            return Err(unproven(format!("{kind}: path is not a string")));
                        }
                        self.tool_path(".", access, false)
                    }
                }
            }
            "todowrite" | "todoread" => Ok(()),
            other => Err(unproven(format!(
                "unmodeled tool or permission \"{}\"",
                other.chars().take(80).collect::<String>()
            ))),
        }
    }

    /// The working directory the bash tool runs in: the session directory, or its `workdir`
    /// argument resolved from it the way OpenCode does (`path.resolve`, lexical).
    pub(super) fn start_cwd(&self, workdir: Option<&str>) -> Result<Cwd, Hit> {
        let Some(cwd) = self.ctx.cwd.to_str() else {
            return Err(unproven("session directory is not UTF-8"));
        };
        let mut logical = lexfold(&[], cwd);
        if let Some(w) = workdir {
            if w.contains(['~', '$']) {
                return Err(unproven(format!("bash: workdir {w} is not a plain path")));
            }
            logical = lexfold(&logical, w);
        }
        let (physical, _) = self
            .resolve(&[], &join(&logical), true)
            .map_err(|e| unproven(format!("bash: working directory: {e}")))?;
        Ok(Cwd { logical, physical })
    }

    /// A path of an edit/read/list tool: relative to the session directory, or (patterns) to
    /// the worktree.
    pub(super) fn tool_path(&mut self, p: &str, access: Access, pattern: bool) -> Result<(), Hit> {
        // Within one request every path has the same access; a repeat has the same verdict.
        let key = (p.to_string(), pattern || p.starts_with('/'));
        if self.tool_done.contains(&key) {
            return Ok(());
        }
        if p.is_empty() || p.contains('\0') {
            return Err(self.hit("empty path"));
        }
        if p.starts_with('~') || p.contains('$') {
            return Err(self.hit(format!("path {p}: `~` or `$` is not expanded by the tool")));
        }
        if pattern && p.contains(['*', '?', '[']) {
            return Err(self.hit(format!("pattern {p} is a glob")));
        }
        // One working directory: checked with `path_from` directly (what `path` does for a
        // single cwd), borrowed from the shared roots rather than copied per path.
        let roots = std::sync::Arc::clone(&self.roots);
        let owned;
        let cwd: &Cwd = if pattern && !p.starts_with('/') {
            let Some(wt) = self.ctx.worktree.to_str() else {
                return Err(self.hit("worktree is not UTF-8"));
            };
            let Some(physical) = roots.worktree.clone() else {
                return Err(self.hit("worktree cannot be resolved"));
            };
            let logical = lexfold(&[], wt);
            owned = Cwd { logical, physical };
            &owned
        } else {
            match &roots.session {
                Some(s) => s,
                None => {
                    owned = self.start_cwd(None)?;
                    &owned
                }
            }
        };
        self.path_from(cwd, p, access, true, "tool")?;
        self.tool_done.push(key);
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Shell
}

/// Paths named by an OpenCode/Codex patch (`*** Add File: p`, `*** Update File: p`,
/// `*** Delete File: p`, `*** Move to: p`; OpenCode takes the text after the colon, trimmed).
/// Any other line starting with `***` (e.g. `*** Move To:`) is an error: a parser more lenient
/// than this one may read a path in it.
pub(super) fn patch_paths(text: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if !l.starts_with("***")
            || matches!(l, "*** Begin Patch" | "*** End Patch" | "*** End of File")
        {
            continue;
        }
        let path = [
            "*** Add File:",
            "*** Update File:",
            "*** Delete File:",
            "*** Move to:",
        ]
        .iter()
        .find_map(|p| l.strip_prefix(p))
        .map(str::trim)
        .filter(|p| !p.is_empty());
        match path {
            Some(p) => out.push(p),
            None => {
                return Err(format!(
                    "patch: header line {:?} is not parsed exactly",
                    l.chars().take(80).collect::<String>()
                ))
            }
        }
    }
    Ok(out)
}
