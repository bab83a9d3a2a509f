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
    assert!(f.tool("read", "$P/.git/config").is_none());
}
