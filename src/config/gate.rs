//! The options of one permission gate (`new PermissionGate({...})`) and their fallbacks.

use std::path::PathBuf;

use super::env::Environment;
use super::vars;
use crate::log::AuditLog;
use crate::policy::engine::{protected_broker_roots, GateConfig};
use crate::provenance::{EpochMs, Limits};

/// The options of a permission gate as its caller gives them (the napi `GateOptions`).
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    /// Where `C2C_BRIDGE_PEER_PERMISSIONS` comes from. Default: the process environment.
    pub env: Environment,
    /// The `peerPermissions` option (`allow`, `ask`, `deny`); checked, with the environment
    /// variable that overrides it, by [`crate::policy::peer_permissions::PeerPermissions::resolve`].
    pub peer_permissions: Option<String>,
    /// The instance directory (tools' cwd), absolute.
    pub directory: PathBuf,
    /// The worktree root (base of edit/write `patterns`). Default: `directory`.
    pub worktree: Option<PathBuf>,
    /// `$HOME`. Default: the process's `HOME`, else `/`.
    pub home: Option<PathBuf>,
    /// The broker root option (`brokerRoot`); default: c2c's resolution.
    pub broker_root: Option<PathBuf>,
    /// When the plugin instance started, epoch milliseconds. Default: now.
    pub started_at_ms: Option<f64>,
}

/// A gate's settings with every fallback applied. The broker-root values (the audit root and
/// [`GateSettings::protected_roots`]) are resolved from the **process** environment, as
/// they always were, whatever [`GateOptions::env`] says (only the mode is read from it).
#[derive(Debug, Clone)]
pub struct GateSettings {
    /// The `peerPermissions` option, unchecked (see [`GateOptions::peer_permissions`]).
    pub peer_permissions: Option<String>,
    /// The raw value of `C2C_BRIDGE_PEER_PERMISSIONS`, if set.
    pub env_peer_permissions: Option<String>,
    /// The instance directory.
    pub directory: PathBuf,
    /// The worktree root.
    pub worktree: PathBuf,
    /// `$HOME`.
    pub home: PathBuf,
    /// The broker root option, if given (the audit log's root; else c2c's resolution).
    pub broker_root: Option<PathBuf>,
    /// Broker roots the guardrail protects ([`protected_broker_roots`]).
    pub protected_roots: Vec<PathBuf>,
    /// When the plugin instance started, epoch milliseconds.
    pub started_at_ms: EpochMs,
}

impl GateSettings {
    /// Apply the fallbacks of `o` (see each field of [`GateOptions`]). Never fails: a bad
    /// mode is reported by [`crate::policy::engine::PermissionGate::new`].
    pub fn resolve(o: GateOptions) -> GateSettings {
        let home = o.home.unwrap_or_else(|| {
            PathBuf::from(
                Environment::Process
                    .var(vars::HOME)
                    .unwrap_or_else(|| "/".to_string()),
            )
        });
        let protected_roots = protected_broker_roots(
            o.broker_root.as_deref(),
            &Environment::Process.root_env(),
            &o.directory,
        );
        GateSettings {
            peer_permissions: o.peer_permissions,
            env_peer_permissions: o.env.var(vars::PEER_PERMISSIONS),
            worktree: o.worktree.unwrap_or_else(|| o.directory.clone()),
            directory: o.directory,
            home,
            broker_root: o.broker_root,
            protected_roots,
            started_at_ms: o
                .started_at_ms
                .map(|ms| ms as EpochMs)
                .unwrap_or_else(crate::time::now_ms),
        }
    }

    /// The audit log of the gate's broker root: [`GateSettings::broker_root`] when given, else
    /// c2c's resolution from the process environment. The root is created (0700) and checked
    /// like a broker's. Errors: as [`crate::store::root::BrokerRoot::open`] and
    /// [`crate::store::root::resolve_path`].
    pub fn audit_log(&self) -> crate::Result<AuditLog> {
        use crate::store::root::{resolve_path, BrokerRoot};
        let (path, source) = resolve_path(
            self.broker_root.as_deref(),
            &Environment::Process.root_env(),
            &self.directory,
        )?;
        let root = BrokerRoot::open(&path, source)?;
        Ok(AuditLog::new(root.log()))
    }

    /// The engine's configuration, writing decisions to `audit`.
    pub fn gate_config(&self, audit: Option<AuditLog>) -> GateConfig {
        GateConfig {
            peer_permissions: self.peer_permissions.clone(),
            env_peer_permissions: self.env_peer_permissions.clone(),
            directory: self.directory.clone(),
            worktree: self.worktree.clone(),
            home: self.home.clone(),
            audit,
            protected_roots: self.protected_roots.clone(),
            limits: Limits {
                instance_started_ms: Some(self.started_at_ms),
                ..Limits::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallbacks_fill_worktree_and_start_and_read_the_mode_from_the_given_env() {
        let s = GateSettings::resolve(GateOptions {
            env: Environment::from_pairs([("C2C_BRIDGE_PEER_PERMISSIONS", "deny")]),
            peer_permissions: Some("allow".into()),
            directory: PathBuf::from("/p/dir"),
            home: Some(PathBuf::from("/h")),
            broker_root: Some(PathBuf::from("/r")),
            started_at_ms: Some(1234.0),
            ..Default::default()
        });
        assert_eq!(s.worktree, PathBuf::from("/p/dir"));
        assert_eq!(s.home, PathBuf::from("/h"));
        assert_eq!(s.env_peer_permissions.as_deref(), Some("deny"));
        assert_eq!(s.peer_permissions.as_deref(), Some("allow"));
        assert_eq!(s.started_at_ms, 1234);
        assert!(s.protected_roots.contains(&PathBuf::from("/r")));
        let s = GateSettings::resolve(GateOptions {
            env: Environment::empty(),
            directory: PathBuf::from("/p/dir"),
            worktree: Some(PathBuf::from("/p")),
            ..Default::default()
        });
        assert_eq!(s.worktree, PathBuf::from("/p"));
        assert_eq!(s.env_peer_permissions, None);
        assert!(s.started_at_ms > 0);
    }
}
