//! Helpers of the relay tests: a real `nats-server` (Debian's package, 2.9+) on 127.0.0.1 at
//! a random port with a temp store dir, users per node with the permissions RELAY.md
//! documents, and connectors in child processes (this test binary re-run with
//! `RELAY_CHILD` set) so that they can be killed with SIGKILL.

#![allow(dead_code)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use c2c_bridge::relay::{Credentials, RelayConfig};

/// The server binary, or `None` (the caller skips with one line).
pub fn nats_server() -> Option<PathBuf> {
    for p in [
        "/usr/sbin/nats-server",
        "/usr/bin/nats-server",
        "/usr/local/bin/nats-server",
    ] {
        if Path::new(p).exists() {
            return Some(p.into());
        }
    }
    None
}

/// Skip the test (one clear line) when `nats-server` is absent.
#[macro_export]
macro_rules! need_nats {
    () => {
        if relay_support::nats_server().is_none() {
            eprintln!("SKIP: nats-server not installed (apt-get install nats-server); .ci/run installs it");
            return;
        }
    };
}

/// The permissions of node `n` in the server config (see RELAY.md).
pub fn node_permissions(n: &str) -> String {
    format!(
        r#"permissions: {{
        publish: {{ allow: [
          "c2c.msg.{n}.>",
          "$KV.c2c_presence.{n}",
          "$JS.API.INFO",
          "$JS.API.STREAM.INFO.C2C_IN_{n}",
          "$JS.API.STREAM.INFO.KV_c2c_presence",
          "$JS.API.CONSUMER.INFO.C2C_IN_{n}.relay",
          "$JS.API.CONSUMER.CREATE.C2C_IN_{n}.relay",
          "$JS.API.CONSUMER.CREATE.C2C_IN_{n}.relay.>",
          "$JS.API.CONSUMER.DURABLE.CREATE.C2C_IN_{n}.relay",
          "$JS.API.CONSUMER.MSG.NEXT.C2C_IN_{n}.relay",
          "$JS.ACK.C2C_IN_{n}.relay.>",
          "$JS.API.CONSUMER.CREATE.KV_c2c_presence",
          "$JS.API.CONSUMER.CREATE.KV_c2c_presence.>",
          "$JS.API.CONSUMER.DELETE.KV_c2c_presence.>",
          "$JS.FC.KV_c2c_presence.>",
          "$JS.API.DIRECT.GET.KV_c2c_presence.>",
          "$JS.API.STREAM.MSG.GET.KV_c2c_presence"
        ] }}
        subscribe: {{ allow: ["_INBOX_{n}.>"] }}
      }}"#
    )
}

/// A running `nats-server`.
pub struct Server {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// Start a server with JetStream in `dir/store` and the users `admin` (may do anything)
    /// and one per node (password `pw-<node>`).
    pub fn start(dir: &Path, nodes: &[&str]) -> Server {
        let port = free_port();
        let mut users = vec![r#"{ user: "admin", password: "pw-admin" }"#.to_string()];
        for n in nodes {
            users.push(format!(
                r#"{{ user: "{n}", password: "pw-{n}", {} }}"#,
                node_permissions(n)
            ));
        }
        let conf = format!(
            r#"listen: "127.0.0.1:{port}"
jetstream {{ store_dir: "{}" }}
accounts {{
  C2C {{
    jetstream: enabled
    users: [
      {}
    ]
  }}
}}
"#,
            dir.join("store").display(),
            users.join(",\n      ")
        );
        std::fs::write(dir.join("nats.conf"), conf).unwrap();
        let mut s = Server {
            port,
            dir: dir.to_path_buf(),
            child: None,
        };
        s.restart();
        s
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// (Re)start the process on the same port and store, and wait for it to listen.
    pub fn restart(&mut self) {
        let child = Command::new(nats_server().expect("nats-server"))
            .arg("-c")
            .arg(self.dir.join("nats.conf"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.dir.join("nats.log")).unwrap())
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < until, "nats-server did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL the server.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Write a 0600 credentials file for `user`.
pub fn creds(dir: &Path, user: &str) -> PathBuf {
    let p = dir.join(format!("{user}.creds"));
    let mut f = std::fs::File::create(&p).unwrap();
    writeln!(f, "user={user}\npassword=pw-{user}").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// Provision the streams of `nodes` and the presence bucket as `admin` (retrying while
/// JetStream starts).
pub fn provision(server: &Server, nodes: &[&str], ttl: Duration) {
    let creds = Credentials::UserPassword("admin".into(), "pw-admin".into());
    let nodes: Vec<String> = nodes.iter().map(|s| s.to_string()).collect();
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        match c2c_bridge::relay::provision(&server.url(), &creds, &nodes, ttl) {
            Ok(()) => return,
            Err(e) if Instant::now() < until => {
                eprintln!("provision: {e}; retrying");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("provision: {e}"),
        }
    }
}

/// A connector config for `node` on `root`, generous limits for bulk tests.
pub fn config(server: &Server, root: &Path, node: &str, password: &str) -> RelayConfig {
    let mut cfg = RelayConfig::new(
        root.to_path_buf(),
        server.url(),
        Credentials::UserPassword(node.into(), password.into()),
        node.into(),
    );
    cfg.presence_ttl = Duration::from_secs(3);
    cfg.rate.burst = 100_000;
    cfg
}

/// A connector in a child process (this test binary with `RELAY_CHILD=<json>`), killable.
pub struct ChildConnector {
    child: Child,
    stop_file: PathBuf,
}

impl ChildConnector {
    pub fn start(server: &Server, root: &Path, node: &str) -> ChildConnector {
        let stop_file = root.with_extension(format!("stop-{node}"));
        let _ = std::fs::remove_file(&stop_file);
        let spec = serde_json::json!({
            "url": server.url(), "root": root, "node": node, "password": format!("pw-{node}"),
            "stop": stop_file,
        });
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_connector",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RELAY_CHILD", spec.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        ChildConnector { child, stop_file }
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Ask it to stop cleanly (it polls for its stop file) and wait for it to exit.
    pub fn stop(&mut self) -> bool {
        std::fs::write(&self.stop_file, b"").unwrap();
        let until = Instant::now() + Duration::from_secs(15);
        while Instant::now() < until {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill9();
        false
    }
}

impl Drop for ChildConnector {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The body of the child process: run a connector until SIGTERM (or SIGKILL).
pub fn child_main() {
    let Ok(spec) = std::env::var("RELAY_CHILD") else {
        return;
    };
    let v: serde_json::Value = serde_json::from_str(&spec).unwrap();
    let root = PathBuf::from(v["root"].as_str().unwrap());
    let node = v["node"].as_str().unwrap().to_string();
    let mut cfg = RelayConfig::new(
        root,
        v["url"].as_str().unwrap().into(),
        Credentials::UserPassword(node.clone(), v["password"].as_str().unwrap().into()),
        node,
    );
    cfg.presence_ttl = Duration::from_secs(3);
    cfg.rate.burst = 100_000;
    // Stand by while another connector (a killed one's lock is gone at once) holds the root.
    let mut relay = loop {
        match c2c_bridge::relay::Relay::start(cfg.clone()) {
            Ok(r) => break r,
            Err(e) => {
                eprintln!("child connector: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    let stop_file = PathBuf::from(v["stop"].as_str().unwrap());
    while !stop_file.exists() {
        std::thread::sleep(Duration::from_millis(50));
    }
    relay.stop().unwrap();
    std::process::exit(0);
}

/// Wait until `f` holds (polling every 50 ms), at most `secs`; false on timeout.
pub fn wait_until(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}
