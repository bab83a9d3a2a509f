//! G2's findings (briefs/g2-findings.md): inputs the engine approved although they alter a
//! protected place. One test per family; each input is left to the prompt.

use super::*;

/// Asserts that every input is left and its reason contains the fragment.
fn all_left(
    f: &Fixture,
    cases: &[(&str, &str)],
    run: impl Fn(&Fixture, &str) -> Option<GuardrailHit>,
) {
    let mut failures = Vec::new();
    for (input, want) in cases {
        match run(f, input) {
            None => failures.push(format!("APPROVED: {input:?}")),
            Some(h) if !h.reason.contains(want) => {
                failures.push(format!("{input:?}: reason {:?} lacks {want:?}", h.reason))
            }
            Some(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn write_tool(f: &Fixture, path: &str) -> Option<GuardrailHit> {
    f.tool("write", path)
}

#[test]
fn dotdot_after_a_component_that_does_not_exist_yet_is_left() {
    let f = fixture();
    let dd = "which does not exist yet";
    all_left(
        &f,
        &[
            ("$P/x/../L/../config", dd),
            ("$P/x/y/../../L/../hooks/pre-commit", dd),
            ("x/../L/../config", dd),
            ("$P/src/new/../x.rs", dd),
        ],
        write_tool,
    );
    all_left(
        &f,
        &[
            ("mkdir -p x && echo y > x/../L/../config", dd),
            ("mkdir x; touch x/../L/../hooks/pre-commit", dd),
            ("mkdir -p a/b && cat a/b/../../L/../config", dd),
            ("mkdir -p x && cd x/../L/.. && echo y > config", dd),
        ],
        Fixture::bash,
    );
    // apply_patch header through the same path.
    let ctx = f.ctx();
    let r = PermissionRequest {
        permission: "apply_patch".into(),
        args: serde_json::json!({"patchText": format!(
            "*** Begin Patch\n*** Add File: {}/x/../L/../config\n+x\n*** End Patch",
            f.proj.display()
        )}),
        ..Default::default()
    };
    assert!(check(&r, &ctx).unwrap().reason.contains(dd));
    // Existing components: still resolved physically and approved when confined.
    assert!(f.tool("write", "$P/src/../docs/new.md").is_none());
    assert!(f.bash("echo y > src/../docs/new.md").is_none());
}

#[test]
fn a_trailing_slash_resolves_through_a_symlink() {
    let f = fixture();
    symlink(f.home.join(".ssh"), f.proj.join("lnk_ssh")).unwrap();
    symlink(".git", f.proj.join("lnk_git")).unwrap();
    symlink("..", f.proj.join("docs/up")).unwrap();
    symlink("build", f.proj.join("lnk_build")).unwrap();
    all_left(
        &f,
        &[
            ("rm -rf lnk_ssh/", "writes ~/.ssh (credentials)"),
            ("rm -rf lnk_ssh/.", "writes ~/.ssh (credentials)"),
            ("rm -rf homelink/", "outside the project"),
            ("rm -r lnk_git/", "git configuration"),
            ("rm -r lnk_git//", "git configuration"),
            ("rm -r docs/up/", "writes ~/proj: outside the project"),
            ("rm -r docs/up/.", "writes ~/proj: outside the project"),
            ("rm -f lnk_git/", "git configuration"),
            ("mv lnk_git/ old", "git configuration"),
            ("mv docs/up/ x", "moves a project root"),
        ],
        Fixture::bash,
    );
    // Without the slash only the link goes; through a link to a confined directory is fine.
    for ok in [
        "rm -r docs/up",
        "rm lnk_ssh",
        "rm -rf lnk_build/",
        "rm -rf lnk_build",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn every_write_under_dot_git_is_git_configuration() {
    let f = fixture();
    fs::write(f.proj.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(f.proj.join(".git/index"), "i").unwrap();
    let gc = "(git configuration)";
    let mut cases: Vec<(String, &str)> = [
        ".git/commondir",
        ".git/config.worktree",
        ".git/gitdir",
        ".git/info/attributes",
        ".git/info/exclude",
        ".git/modules/x/config",
        ".git/objects/info/alternates",
        ".git/packed-refs",
        ".git/HEAD",
        ".git/index",
        ".git/refs/heads/main",
        ".GIT/Commondir",
        "sub/.git/config",
    ]
    .iter()
    .map(|p| (format!("echo ../tmp/evil > {p}"), gc))
    .collect();
    cases.extend(
        [
            "rm .git/index",
            "rm -rf .git/objects",
            "mkdir -p .git/info",
            "touch .git/packed-refs",
            "cp README.md .git/description",
            "mv notes.txt .git/HEAD",
            "cp -t .git/info README.md",
            "mkdir -p tmp/evil/objects tmp/evil/refs && printf '[core]\\n\\tfsmonitor = echo pwned >> ~/.bashrc\\n' > tmp/evil/config && echo ../tmp/evil > .git/commondir && git status --short",
        ]
        .map(|c| (c.to_string(), gc)),
    );
    let cases: Vec<(&str, &str)> = cases.iter().map(|(c, w)| (c.as_str(), *w)).collect();
    all_left(&f, &cases, Fixture::bash);
    all_left(
        &f,
        &[
            ("$P/.git/commondir", gc),
            ("$P/.git/objects/info/alternates", gc),
            (".git/modules/x/config", gc),
        ],
        write_tool,
    );
    // Reads and listings of .git stay allowed.
    for ok in [
        "cat .git/HEAD",
        "ls -la .git",
        "ls .git/objects",
        "git status",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
    // Except `.git/config`, which may carry a token (red-team R3, tests/redteam.rs).
    assert!(f.tool("read", "$P/.git/config").is_some());
}

#[test]
fn names_other_tools_read_or_run_are_protected() {
    let f = fixture();
    let cases: &[(&str, &str)] = &[
        ("AGENTS.override.md", "(agent instructions)"),
        ("GEMINI.md", "(agent instructions)"),
        ("src/GEMINI.md", "(agent instructions)"),
        (".cursorrules", "(agent instructions)"),
        (".windsurfrules", "(agent instructions)"),
        (".clinerules", "(agent instructions)"),
        (".clinerules/x.md", "(agent instructions)"),
        (".github/copilot-instructions.md", "(agent instructions)"),
        (".cursor/rules/x.mdc", "(agent instructions)"),
        (".gemini/settings.json", "(credentials)"),
        (".codex/config.toml", "(credentials)"),
        (".continue/config.json", "(agent instructions)"),
        (".aider.conf.yml", "(agent instructions)"),
        (".mcp.json", "(agent instructions)"),
        (".cargo/config", "(scheduling/persistence)"),
        (".cargo/config.toml", "(scheduling/persistence)"),
        (".pre-commit-config.yaml", "(git configuration)"),
        ("lefthook.yml", "(git configuration)"),
        (".mise.toml", "(scheduling/persistence)"),
        (".tool-versions", "(scheduling/persistence)"),
        (".github/workflows/ci.yml", "(scheduling/persistence)"),
        (".gitlab-ci.yml", "(scheduling/persistence)"),
        (".circleci/config.yml", "(scheduling/persistence)"),
        (".idea/workspace.xml", "(scheduling/persistence)"),
        (".zed/tasks.json", "(scheduling/persistence)"),
        (".vscode/tasks.json", "(scheduling/persistence)"),
        (
            ".devcontainer/devcontainer.json",
            "(scheduling/persistence)",
        ),
        // The same families, further members.
        ("QWEN.md", "(agent instructions)"),
        (".roo/rules/x.md", "(agent instructions)"),
        (".kiro/steering/x.md", "(agent instructions)"),
        (".github/prompts/x.prompt.md", "(agent instructions)"),
        (
            ".github/actions/setup/action.yml",
            "(scheduling/persistence)",
        ),
        (".travis.yml", "(scheduling/persistence)"),
        ("Jenkinsfile", "(scheduling/persistence)"),
        (".buildkite/pipeline.yml", "(scheduling/persistence)"),
        ("rust-toolchain.toml", "(scheduling/persistence)"),
        (".pnpmfile.cjs", "(scheduling/persistence)"),
        (".config/mise/config.toml", "(scheduling/persistence)"),
    ];
    let bash: Vec<(String, &str)> = cases
        .iter()
        .map(|(p, w)| (format!("echo x > {p}"), *w))
        .collect();
    let bash: Vec<(&str, &str)> = bash.iter().map(|(c, w)| (c.as_str(), *w)).collect();
    all_left(&f, &bash, Fixture::bash);
    let tool: Vec<(String, &str)> = cases.iter().map(|(p, w)| (format!("$P/{p}"), *w)).collect();
    let tool: Vec<(&str, &str)> = tool.iter().map(|(c, w)| (c.as_str(), *w)).collect();
    all_left(&f, &tool, write_tool);
    // Similar names stay ordinary project files.
    for ok in [
        "echo x > docs/workflows.md",
        "echo x > gradle.properties",
        "echo x > settings.xml",
        "echo x > src/config.toml",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn credential_names_are_not_read_anywhere() {
    let f = fixture();
    let creds = "(credentials)";
    let names = [
        ".claude/.credentials.json",
        ".codex/auth.json",
        ".gemini/oauth_creds.json",
        ".config/github-copilot/hosts.json",
        ".config/rclone/rclone.conf",
        "rclone.conf",
        ".terraform.d/credentials.tfrc.json",
        ".s3cfg",
        ".boto",
        ".m2/settings.xml",
        ".gradle/gradle.properties",
        ".composer/auth.json",
        ".config/composer/auth.json",
        ".config/hub",
        ".local/share/keyrings/login.keyring",
        ".bash_history",
        ".zsh_history",
        ".psql_history",
        ".python_history",
        ".node_repl_history",
        ".mysql_history",
        ".sqlite_history",
        ".histfile",
        ".opencode/.env",
    ];
    // Inside the project (where the "outside the project" rule does not apply).
    let bash: Vec<String> = names.iter().map(|n| format!("cat {n}")).collect();
    let bash: Vec<(&str, &str)> = bash.iter().map(|c| (c.as_str(), creds)).collect();
    all_left(&f, &bash, Fixture::bash);
    let tool: Vec<String> = names.iter().map(|n| format!("$P/{n}")).collect();
    let tool: Vec<(&str, &str)> = tool.iter().map(|c| (c.as_str(), creds)).collect();
    all_left(&f, &tool, |f, p| f.tool("read", p));
}

#[test]
fn reads_under_home_outside_the_project_are_left() {
    let f = fixture();
    fs::create_dir_all(f.home.join(".config/someapp")).unwrap();
    fs::write(f.home.join(".config/someapp/state.json"), "t").unwrap();
    fs::write(f.home.join("other/notes.txt"), "n").unwrap();
    let why = "reads outside the project under $HOME are not shown harmless";
    all_left(
        &f,
        &[
            ("cat ~/.bashrc", why),
            ("cat ~/other/notes.txt", why),
            ("cat ~/.config/someapp/state.json", why),
            ("head -1 $HOME/.config/someapp/state.json", why),
            ("cat homelink/.config/someapp/state.json", why),
            ("cat ../other/notes.txt", why),
            ("grep -n x ~/.config/someapp/state.json", why),
            ("wc -c < ~/.config/someapp/state.json", why),
            ("cd .. && cat other/notes.txt", why),
            ("diff README.md ~/other/notes.txt", why),
        ],
        Fixture::bash,
    );
    all_left(
        &f,
        &[
            ("$P/../.config/someapp/state.json", why),
            ("$P/homelink/other/notes.txt", why),
        ],
        |f, p| f.tool("read", p),
    );
    // Listing stays allowed; reads in the project and outside $HOME too.
    for ok in [
        "ls ~",
        "ls -la ~/.config",
        "cat README.md",
        "cat /etc/hostname",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn git_after_a_command_that_writes_is_left() {
    let f = fixture();
    let why = "git in a command that also writes files";
    all_left(
        &f,
        &[
            ("mkdir -p b/objects b/refs && echo 'ref: refs/heads/main' > b/HEAD && printf '[core]\\n' > b/config && cd b && git status", why),
            ("mkdir -p b/objects b/refs; cd b; git log", why),
            ("touch HEAD; git status", why),
            ("echo x > notes.txt && git diff", why),
            ("cp README.md docs/x.md; git status", why),
            ("rm -f notes.txt; git status", why),
            ("echo x > notes.txt | git status", why),
            ("ls; mkdir -p x && git -P log -1", why),
        ],
        Fixture::bash,
    );
    // Reads before git, /dev/null redirections and writes after git stay approved.
    for ok in [
        "ls && git status",
        "git status 2>/dev/null",
        "cat README.md >/dev/null; git diff",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn patch_header_lines_not_parsed_exactly_are_left() {
    let f = fixture();
    let ctx = f.ctx();
    let patch = |body: &str| PermissionRequest {
        permission: "apply_patch".into(),
        args: serde_json::json!({
            "patchText": format!("*** Begin Patch\n{body}\n*** End Patch")
        }),
        ..Default::default()
    };
    let why = "is not parsed exactly";
    for body in [
        "*** Update File: src/x.rs\n*** Move To: .git/config\n@@\n-a\n+b",
        "*** Update File: src/x.rs\n*** move to: .git/config\n@@\n-a\n+b",
        "*** Add  File: .git/config\n+x",
        "*** Create File: AGENTS.md\n+x",
        "*** Add File: src/y.rs\n+x\n***Add File: .bashrc",
        "*** Update File: src/x.rs\n@@\n-a\n+b\n*** Delete File:",
    ] {
        let h = check(&patch(body), &ctx).unwrap_or_else(|| panic!("approved: {body:?}"));
        assert!(h.reason.contains(why), "{body:?}: {}", h.reason);
    }
    // OpenCode reads the text after the colon, trimmed: a tab instead of a space is a path.
    let h = check(&patch("*** Add File:\t.git/config\n+x"), &ctx).unwrap();
    assert!(h.reason.contains("git configuration"), "{}", h.reason);
    for ok in [
        "*** Add File: src/y.rs\n+x",
        "*** Update File: src/x.rs\n*** Move to: src/z.rs\n@@\n-a\n+b\n*** End of File",
        "*** Delete File: notes.txt",
    ] {
        assert!(check(&patch(ok), &ctx).is_none(), "{ok:?}");
    }
}

#[test]
fn a_glob_after_a_command_that_writes_is_left() {
    let f = fixture();
    fs::create_dir_all(f.proj.join("src/util")).unwrap();
    fs::write(f.proj.join("src/util/.env"), "SECRET=x\n").unwrap();
    let why = "glob in a command that also writes files";
    all_left(
        &f,
        &[
            // (The directory util matched by the glob is read through as well.)
            ("cd src && touch ./-r && grep -n SECRET *", "(credentials)"),
            ("cd src && touch ./-r && rm -f *", why),
            ("cd src && touch ./-rf && rm *", why),
            ("touch src/-r && cd src && rm -f *", why),
            ("echo x > src/-R; grep -n x src/*", "(credentials)"),
            ("echo x > src/-R; ls src/*", why),
            ("mkdir -p src/-r; ls src/*", why),
        ],
        Fixture::bash,
    );
    // Without a write, and with /dev/null only, a glob is expanded from the listing.
    for ok in ["ls src/*.rs", "ls 2>/dev/null; cat docs/*.md"] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn a_directory_given_to_a_reading_program_is_read_through() {
    let f = fixture();
    fs::create_dir_all(f.proj.join("app")).unwrap();
    fs::write(f.proj.join("app/.env"), "SECRET=x\n").unwrap();
    symlink("..", f.proj.join("docs/up")).unwrap();
    let why = "(credentials)";
    all_left(
        &f,
        &[
            ("diff -u -N . build", "diff reads ~/proj/"),
            ("diff -N app build", why),
            ("diff -N docs/up build", "diff reads ~/proj/"),
            ("diff -q secrets-dir build", why),
            ("cmp app build", why),
            // docs/up -> .. leads out of docs: a recursive reader may follow it (R6).
            ("diff -N docs build", "outside it"),
        ],
        Fixture::bash,
    );
    for ok in ["diff -u README.md notes.txt", "diff -N build src"] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn places_the_git_configuration_names_are_git_configuration() {
    let f = fixture();
    fs::create_dir_all(f.proj.join(".githooks")).unwrap();
    fs::create_dir_all(f.proj.join("scripts")).unwrap();
    fs::write(f.proj.join("scripts/build.sh"), "echo\n").unwrap();
    let gc = "(git configuration)";
    for (config, cases) in [
        (
            "[core]\n\thooksPath = .githooks\n",
            vec![
                "echo x > .githooks/pre-commit",
                "cp scripts/build.sh .githooks/post-index-change",
                "mv scripts/build.sh .githooks/pre-commit",
                "printf 'echo pwned\\n' >> .githooks/post-index-change",
                "rm -rf .githooks",
            ],
        ),
        (
            "[core]\n  HooksPath = \"tools/hooks\" # shared\n",
            vec!["mkdir -p tools/hooks", "echo x > tools/hooks/pre-push"],
        ),
        (
            "[include]\n\tpath = ../.gitconfig.shared\n",
            vec!["printf '[core]\\n\\tfsmonitor = x\\n' > .gitconfig.shared; git status --short"],
        ),
        (
            "[core]\n\tfsmonitor = .githooks/fsmonitor\n",
            vec!["echo x > .githooks/fsmonitor"],
        ),
        (
            "[diff \"bin\"]\n\ttextconv = sh scripts/conv.sh\n",
            vec!["echo x > scripts/conv.sh"],
        ),
        (
            "[filter \"lfs\"]\n\tclean = ./scripts/clean %f\n",
            vec!["echo x > scripts/clean"],
        ),
    ] {
        fs::write(f.proj.join(".git/config"), config).unwrap();
        let cases: Vec<(&str, &str)> = cases.iter().map(|c| (*c, gc)).collect();
        all_left(&f, &cases, Fixture::bash);
    }
    // The write tool as well; an included file's own hooksPath too.
    fs::write(
        f.proj.join(".git/config"),
        "[includeIf \"gitdir:~/\"]\n\tpath = ~/other/inc.cfg\n",
    )
    .unwrap();
    fs::write(
        f.home.join("other/inc.cfg"),
        "[core]\nhooksPath=~/proj/hk\n",
    )
    .unwrap();
    all_left(&f, &[("$P/hk/pre-commit", gc)], write_tool);
    assert!(f.bash("echo x > hk/pre-commit").is_some());
    // A hooks directory that is the project itself: no write is shown confined.
    fs::write(f.proj.join(".git/config"), "[core]\n\thooksPath = .\n").unwrap();
    let h = f.bash("echo x > pre-commit").unwrap();
    assert!(
        h.reason.contains("is the project or above it") || h.reason.contains("git configuration"),
        "{}",
        h.reason
    );
    // Ordinary configuration protects nothing else.
    fs::write(
        f.proj.join(".git/config"),
        "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/x.git\n",
    )
    .unwrap();
    for ok in [
        "echo x > notes.txt",
        "echo x > scripts/build.sh",
        "git status",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn security_md_lists_exactly_the_protected_names() {
    let doc = include_str!("../../../../SECURITY.md");
    let begin = "<!-- protected-names:begin (generated: cargo run --example guardrail_names) -->\n";
    let a = doc
        .find(begin)
        .expect("SECURITY.md has the generated block")
        + begin.len();
    let b = doc[a..]
        .find("<!-- protected-names:end -->")
        .expect("end marker")
        + a;
    assert_eq!(
        &doc[a..b],
        protected_names_markdown(),
        "SECURITY.md is stale: run `cargo run --example guardrail_names` and paste its output"
    );
}

#[test]
fn a_pipeline_that_writes_and_globs_or_runs_git_is_left() {
    let f = fixture();
    let why = "in a command that also writes files";
    all_left(
        &f,
        &[
            ("grep -n x src/* | touch src/-r", why),
            ("ls src/* | cat > src/-r", why),
            ("git status | cat > HEAD", why),
            ("git log | echo x > notes.txt", why),
        ],
        Fixture::bash,
    );
    for ok in [
        "ls src/* | wc -l",
        "git log --oneline | head -5",
        "git status 2>/dev/null | cat",
        "cat README.md | grep hello > out.txt",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn a_cd_after_or_may_be_skipped() {
    // Found by G2's exec test (seed 0x5eed0f3, case 5389): `a || cd docs && rm ...` runs the
    // rm in the old directory when `a` succeeds.
    let f = fixture();
    fs::create_dir_all(f.proj.join("app/lib")).unwrap();
    fs::write(f.proj.join("app/lib/AGENTS.md"), "x").unwrap();
    all_left(
        &f,
        &[
            (
                "cat README.md || cd docs && rm -f app/lib/*",
                "several possible working directories",
            ),
            (
                "f=AGENTS.md; cat \"$f\" || cd docs && rm -f app/lib/*",
                "several possible working directories",
            ),
            (
                "true || cd docs && echo x > .git/config",
                "git configuration",
            ),
            ("ls || cd src && echo x > AGENTS.md", "agent instructions"),
        ],
        Fixture::bash,
    );
    assert!(f.bash("ls || cd docs && echo x > notes.md").is_none());
}
