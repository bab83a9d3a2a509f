//! The names of the environment variables c2c-bridge reads, each once (besides
//! `C2C_BRIDGE_LOG`, which [`crate::diagnostics`] reads at load). What each one sets,
//! its unit and default: the [`crate::config`] table.

/// The broker root (c2c's). In root resolution it comes after an explicit `root` and before
/// c2c's per-repository default; in the plugin options it overrides `brokerRoot`, as every
/// variable overrides its option.
pub const BROKER_ROOT: &str = "C2C_MCP_BROKER_ROOT";
/// c2c ≥ 0.9's state home, checked before `XDG_STATE_HOME` in root resolution.
pub const C2C_STATE_HOME: &str = "C2C_STATE_HOME";
/// The XDG state home of root resolution.
pub const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
/// The home directory: root resolution's last resort, `~/` in paths, the gate's `home`.
pub const HOME: &str = "HOME";
/// The plugin's `alias`.
pub const ALIAS: &str = "C2C_BRIDGE_ALIAS";
/// The plugin's `supervisors` (a comma-separated list).
pub const SUPERVISORS: &str = "C2C_SUPERVISORS";
/// The plugin's `maxMessageBytes`.
pub const MAX_MESSAGE_BYTES: &str = "C2C_BRIDGE_MAX_MESSAGE_BYTES";
/// `inbound` (plugin option and `Broker.open`).
pub const INBOUND: &str = crate::policy::inbound::ENV_INBOUND;
/// `peerPermissions` (plugin option and `new PermissionGate`).
pub const PEER_PERMISSIONS: &str = crate::policy::peer_permissions::ENV_PEER_PERMISSIONS;
/// c2c's TTL of pending-reply slots, float seconds.
pub const PERMISSION_TTL: &str = crate::pending::TTL_ENV;
