//! The red team's findings R1–R5 (briefs/redteam-findings.md): inputs main approved although
//! they read credentials or run code. One test per finding; each family is left.

use super::*;

fn left(f: &Fixture, cmd: &str) -> GuardrailHit {
    f.bash(cmd).unwrap_or_else(|| panic!("APPROVED: {cmd:?}"))
}

fn assert_left(f: &Fixture, cases: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for (cmd, want) in cases {
        let cmd = cmd.replace("$P", f.proj.to_str().unwrap());
        match f.bash(&cmd) {
            None => failures.push(format!("APPROVED: {cmd:?}")),
            Some(h) if !h.reason.contains(want) => {
                failures.push(format!("{cmd:?}: reason {:?} lacks {want:?}", h.reason))
            }
            Some(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn r1_git_diff_with_an_operand_outside_the_worktree_is_left() {
    let f = fixture();
    let out = "outside the worktree";
    assert_left(
        &f,
        &[
            ("git diff docs ~", out),
            ("git diff docs $HOME", out),
            ("git diff --name-only /var/empty /", out),
            ("git diff /srv .", out),
            ("git diff /usr docs", out),
            ("git diff -- docs ~", out),
            ("git --no-pager diff docs ~", out),
            ("git diff --cached docs ~", out),
            ("git diff --stat /usr docs", out),
            ("cd docs && git diff . ~", out),
            ("git diff docs homelink", "under $HOME"),
            ("git diff docs ..", out),
            ("git diff docs /home", out),
            ("git log -p -- docs ~", out),
            ("git blame ../x", out),
        ],
    );
    // In the worktree: still approved.
    for ok in [
        "git diff",
        "git diff docs src",
        "git diff HEAD -- src/x.rs",
        "git log -p -- src",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn r2_reads_outside_the_project_only_from_system_locations() {
    let f = fixture();
    let outside = "outside the project only";
    assert_left(
        &f,
        &[
            (
                "cat /var/run/secrets/kubernetes.io/serviceaccount/token",
                "token",
            ),
            ("cat /run/secrets/db_password", outside),
            ("cat /srv/app/config.yml", outside),
            ("cat /tmp/x", outside),
            ("cat /home/other/.profile", outside),
            ("head /opt/app/creds.txt", outside),
            ("grep -r x /", outside),
            ("cat /etc/shadow", "(credentials)"),
            ("cat /etc/gshadow", "(credentials)"),
            ("cat /etc/sudoers", "(credentials)"),
            ("cat /etc/ssh/ssh_host_ed25519_key", "(credentials)"),
            ("cat /etc/ssl/private/server.key", "(credentials)"),
            ("cat /etc/letsencrypt/live/x/privkey.pem", "(credentials)"),
            ("grep -r PRIVATE /etc", "(credentials)"),
            // Under $HOME: tool tokens no table names.
            ("cat ~/.local/share/opencode/mcp-auth.json", "(credentials)"),
            ("cat ~/.local/share/fish/fish_history", "(credentials)"),
            ("cat ~/.config/sops/age/keys.txt", "under $HOME"),
            ("cat ~/.kaggle/kaggle.json", "under $HOME"),
            ("cat ~/.databrickscfg", "under $HOME"),
            ("cat ~/.viminfo", "under $HOME"),
        ],
    );
    // In the project: names that say secret.
    for name in [
        "server.key",
        "cert.pem",
        "api_token.txt",
        "client_secret.json",
        "fish_history",
        "mcp-auth.json",
        "HF_TOKEN",
    ] {
        fs::write(f.proj.join(name), "CANARY").unwrap();
        let h = left(&f, &format!("cat {name}"));
        assert_eq!(h.category, Category::Credentials, "{name}: {}", h.reason);
        let h = f.tool("read", &format!("$P/{name}")).expect(name);
        assert_eq!(h.category, Category::Credentials, "read tool {name}");
    }
    // System locations and /dev/null stay readable.
    for ok in [
        "cat /etc/os-release",
        "head /usr/include/stdio.h",
        "cat /dev/null",
    ] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
}

#[test]
fn r3_git_configuration_that_may_carry_tokens_is_not_read() {
    let f = fixture();
    assert_left(
        &f,
        &[
            ("cat .git/config", "reads ~/proj/.git/config"),
            ("head -n 50 .git/config", "reads ~/proj/.git/config"),
            ("cat $P/.git/config", "reads ~/proj/.git/config"),
            ("cd .git && cat config", "reads ~/proj/.git/config"),
            ("cat L/../config", "reads ~/proj/.git/config"),
            ("git remote -v", "option -v of git remote"),
            ("git remote --verbose", "option --verbose of git remote"),
            ("git config -l", "not modeled"),
            ("git config --get remote.origin.url", "not modeled"),
            ("git ls-remote", "not modeled"),
        ],
    );
    let h = f.tool("read", "$P/.git/config").expect("read tool");
    assert!(h.reason.contains(".git/config"), "{}", h.reason);
    // A recursive read passes through a `.git/config`: approved only when it shows no
    // credential.
    fs::create_dir_all(f.proj.join("docs/vendored/.git")).unwrap();
    let cfg = f.proj.join("docs/vendored/.git/config");
    fs::write(
        &cfg,
        "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://github.com/o/r\n",
    )
    .unwrap();
    assert!(
        f.bash("grep -r foo docs").is_none(),
        "{:?}",
        f.bash("grep -r foo docs")
    );
    for config in [
        "[remote \"origin\"]\n\turl = https://x-access-token:ghp_CANARY@github.com/o/r\n",
        "[remote \"origin\"]\n\turl = https://CANARY@github.com/o/r\n",
        "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic CANARY\n",
        "[include]\n\tpath = creds.inc\n",
    ] {
        fs::write(&cfg, config).unwrap();
        for cmd in ["grep -r CANARY docs", "grep -rn x docs", "rg x docs"] {
            let h = left(&f, cmd);
            assert_eq!(h.category, Category::Credentials, "{cmd}: {}", h.reason);
        }
    }
    fs::write(&cfg, "[core]\n").unwrap();
    fs::create_dir_all(f.proj.join("docs/vendored/.git/modules/m")).unwrap();
    assert!(left(&f, "grep -r x docs").reason.contains("modules"));
    assert!(f.bash("git remote").is_none());
}

#[test]
fn r4_git_attributes_are_git_configuration_and_drivers_leave_content_commands() {
    let f = fixture();
    assert_left(
        &f,
        &[
            (
                "printf '*.js diff=lockb\\n' > .gitattributes",
                "(git configuration)",
            ),
            ("echo x >> src/.gitattributes", "(git configuration)"),
            (
                "echo '[submodule \"x\"]' > .gitmodules",
                "(git configuration)",
            ),
            ("echo x > .lfsconfig", "(git configuration)"),
            ("cp README.md .gitattributes", "(git configuration)"),
        ],
    );
    assert!(f.tool("write", "$P/docs/.gitattributes").is_some());
    for (config, cmds) in [
        (
            "[diff \"lockb\"]\n\ttextconv = bun\n",
            &[
                "git diff",
                "git log -p",
                "git show",
                "git diff --stat",
                "git blame src/x.rs",
            ][..],
        ),
        (
            "[diff \"x\"]\n\tcommand = /usr/bin/python3 conv.py\n",
            &["git diff"][..],
        ),
        (
            "[diff]\n\texternal = difft\n",
            &["git diff", "git log -p"][..],
        ),
        (
            "[filter \"x\"]\n\tclean = node clean.js\n",
            &["git status", "git diff"][..],
        ),
        (
            "[filter \"x\"]\n\tprocess = /opt/bin/proc\n",
            &["git status --short"][..],
        ),
        (
            "[core]\n\tfsmonitor = /usr/local/bin/watchman-hook\n",
            &["git status"][..],
        ),
    ] {
        let f = fixture();
        fs::write(f.proj.join(".git/config"), config).unwrap();
        for cmd in cmds {
            let h = left(&f, cmd);
            assert!(
                h.reason.contains("runs a program on contents"),
                "{config}{cmd}: {}",
                h.reason
            );
        }
        // Commands that produce no contents stay approved.
        assert!(f.bash("git branch").is_none(), "{config}: git branch");
    }
    // git-lfs's standard filter runs a fixed program: content commands stay approved.
    let f = fixture();
    fs::write(
        f.proj.join(".git/config"),
        "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\tprocess = git-lfs filter-process\n\trequired = true\n",
    )
    .unwrap();
    assert!(f.bash("git diff").is_none(), "{:?}", f.bash("git diff"));
}

#[test]
fn r5_context_md_and_agents_skills_are_agent_instructions() {
    let f = fixture();
    assert_left(
        &f,
        &[
            ("echo 'Always run: x' > CONTEXT.md", "(agent instructions)"),
            ("echo x >> docs/context.md", "(agent instructions)"),
            (
                "mkdir -p .agents/skills/setup && echo x > .agents/skills/setup/SKILL.md",
                "(agent instructions)",
            ),
            ("mkdir .agents", "(agent instructions)"),
            ("cp README.md CONTEXT.md", "(agent instructions)"),
        ],
    );
    for p in ["$P/CONTEXT.md", "$P/.agents/skills/setup/SKILL.md"] {
        let h = f.tool("write", p).expect(p);
        assert_eq!(h.category, Category::AgentInstructions, "{p}");
    }
}

#[test]
fn r6_a_symlink_met_in_a_recursive_read_is_judged_like_a_read() {
    let f = fixture();
    fs::create_dir_all(f.proj.join("tree/sub")).unwrap();
    fs::write(f.proj.join("tree/sub/a.txt"), "a").unwrap();
    // Benign: a link to a file or directory inside the walked tree, a dangling link.
    symlink("sub", f.proj.join("tree/sublink")).unwrap();
    symlink("sub/a.txt", f.proj.join("tree/alink")).unwrap();
    symlink("nowhere", f.proj.join("tree/dangling")).unwrap();
    for ok in ["grep -r x tree", "rg x tree"] {
        assert!(f.bash(ok).is_none(), "{ok}: {:?}", f.bash(ok));
    }
    let grep_tool = |path: &str| {
        let r = PermissionRequest {
            permission: "grep".into(),
            args: serde_json::json!({"pattern": "x", "path": path.replace("$P", f.proj.to_str().unwrap())}),
            ..Default::default()
        };
        check(&r, &f.ctx())
    };
    assert!(grep_tool("$P/tree").is_none(), "{:?}", grep_tool("$P/tree"));
    for (target, want) in [
        (f.home.clone(), "outside it"),
        (f.proj.clone(), "outside it"),
        (PathBuf::from("/usr/share"), "outside it"),
        (f.home.join(".ssh/id_rsa"), "(credentials)"),
        (f.home.join(".bashrc"), "under $HOME"),
        (f.proj.join(".git/config"), "may hold credentials"),
        (f.proj.join("secrets-dir/.env"), "(credentials)"),
        (PathBuf::from("/run"), "outside it"),
    ] {
        let link = f.proj.join("tree/link");
        let _ = fs::remove_file(&link);
        symlink(&target, &link).unwrap();
        for cmd in [
            "grep -r x tree",
            "rg x tree",
            "grep -rn x .",
            "diff -N tree build",
        ] {
            let h = left(&f, cmd);
            assert!(
                h.reason.contains(want) || cmd.contains(" ."),
                "{target:?} {cmd}: {}",
                h.reason
            );
        }
        let h = grep_tool("$P/tree").unwrap_or_else(|| panic!("grep tool approved {target:?}"));
        assert!(
            h.reason.contains(want),
            "{target:?} grep tool: {}",
            h.reason
        );
    }
}

#[test]
fn r5_opencode_instructions_globs_protect_the_files_they_name() {
    let f = fixture();
    fs::create_dir_all(f.proj.join("docs/rules")).unwrap();
    let ctx = f.ctx().with_instruction_globs(vec![
        "CONTRIBUTING.md".into(),
        "docs/*.md".into(),
        ".cursor-like/**/*.mdc".into(),
        "~/shared/rules.md".into(),
        "{a,b}.md".into(),
    ]);
    let mut failures = Vec::new();
    for cmd in [
        "echo x > CONTRIBUTING.md",
        "echo x > contributing.md",
        "echo x >> docs/guide.md",
        "cp README.md docs/new.md",
        "echo x > .cursor-like/a/b/c.mdc",
        "rm -rf docs",
        "echo x > zz.md",
    ] {
        match f.bash_ctx(cmd, &ctx) {
            Some(h) if h.category == Category::AgentInstructions => {}
            other => failures.push(format!("{cmd}: {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let r = PermissionRequest {
        permission: "write".into(),
        filepath: Some(f.proj.join("docs/guide.md").to_string_lossy().into()),
        ..Default::default()
    };
    assert_eq!(
        check(&r, &ctx).map(|h| h.category),
        Some(Category::AgentInstructions)
    );
    // Not named: approved; reads stay approved; unset by default.
    for ok in [
        "echo x > docs/rules/x.txt",
        "echo x > notes.txt",
        "cat docs/guide.md",
    ] {
        assert!(
            f.bash_ctx(ok, &ctx).is_none(),
            "{ok}: {:?}",
            f.bash_ctx(ok, &ctx)
        );
    }
    assert!(f.bash("echo x >> docs/guide.md").is_none());
}
