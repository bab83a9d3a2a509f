mod guardrail_support;
use guardrail_support::{Entry, Sandbox};
#[test]
fn probe() {
    let sb = Sandbox::new();
    if let Ok(v) = std::env::var("MKFILES") {
        for f in v.split(',') {
            std::fs::write(sb.project.join(f), "x").unwrap();
        }
    }
    if std::env::var("HOOKSPATH").is_ok() {
        std::fs::write(
            sb.project.join(".git/config"),
            "[core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        std::fs::create_dir_all(sb.project.join(".githooks")).unwrap();
    }
    let text = std::fs::read_to_string("/tmp/probe.jsonl").unwrap();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let e: Entry = serde_json::from_str(l).unwrap();
        for (k, t) in &e.links {
            sb.link(k, t);
        }
        let ctx = if std::env::var("HOMECTX").is_ok() {
            c2c_bridge::policy::guardrail::PathContext::new(&sb.home, &sb.home, &sb.home)
        } else {
            sb.ctx()
        };
        let r = c2c_bridge::policy::guardrail::check(&e.request(&sb), &ctx);
        for k in e.links.keys() {
            let _ = std::fs::remove_file(sb.project.join(k));
        }
        match r {
            None => println!("APPROVED  {}", e.describe()),
            Some(h) => println!(
                "left      {} -> {}",
                e.describe(),
                h.reason.replace(&sb.root.display().to_string(), "@R@")
            ),
        }
    }
}
