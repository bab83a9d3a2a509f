//! Local policy decisions: pure functions over typed facts. No I/O (except the one clearly
//! marked helper in [`inbound`], and the audit line [`engine`] appends), no napi, and never
//! any message text as an input.
//!
//! - [`peer_permissions`]: whether a permission request of a peer-triggered turn is answered
//!   `once`, `reject`, or left to OpenCode's prompt; the "answered once" tracker.
//! - [`inbound`]: whether a peer message reaches the model (accept / auto / hold / refuse).
//! - [`hops`]: the `via` hop list that stops relay loops.
//! - [`rate`]: the per sender→recipient rate limiter.
//!
//! - [`guardrail`]: the fail-closed guardrail over structured permission input (approve only
//!   what it shows confined); its category enters [`peer_permissions::decide`] as a plain value.
//! - [`engine`]: the per-instance [`engine::PermissionGate`] that joins the turn index,
//!   the guardrail and `peerPermissions` over facts decoded by [`crate::opencode`], and writes
//!   the audit line.

pub mod engine;
pub mod guardrail;
pub mod hops;
pub mod inbound;
pub mod peer_permissions;
pub mod rate;
pub mod strictest;

/// Where a setting's effective value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingSource {
    /// Neither the plugin option nor the environment set it.
    Default,
    /// The plugin option (`"plugin": [["c2c-bridge", {...}]]`).
    Option,
    /// The environment variable, which overrides the plugin option.
    Env,
}

/// A setting had a value outside its vocabulary. Unknown values are errors rather than
/// silently replaced by the default: a typo in `deny` must not turn into `allow`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {setting} {value:?} from {source_name}: expected one of {}", valid.join(", "))]
pub struct InvalidSetting {
    /// The setting's name as the user writes it, e.g. `"peerPermissions"`.
    pub setting: &'static str,
    /// Where the bad value came from, e.g. `"C2C_BRIDGE_PEER_PERMISSIONS"` or
    /// `"plugin option"`.
    pub source_name: &'static str,
    /// The rejected value (at most 64 characters of it).
    pub value: String,
    /// The accepted values.
    pub valid: &'static [&'static str],
}

/// Parse one setting from an optional plugin option and an optional environment value.
/// Both are checked when present (a bad option is reported even when the environment
/// overrides it); the environment wins. An empty or all-blank value counts as unset.
/// Matching ignores ASCII case and surrounding blanks.
pub(crate) fn resolve_setting<T: Copy + Default>(
    setting: &'static str,
    env_name: &'static str,
    table: &'static [(&'static str, T)],
    valid: &'static [&'static str],
    option: Option<&str>,
    env: Option<&str>,
) -> Result<(T, SettingSource), InvalidSetting> {
    let parse = |raw: Option<&str>, source_name: &'static str| {
        let Some(v) = raw.map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        table
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(v))
            .map(|(_, t)| Some(*t))
            .ok_or_else(|| InvalidSetting {
                setting,
                source_name,
                value: v.chars().take(64).collect(),
                valid,
            })
    };
    let from_option = parse(option, "plugin option")?;
    let from_env = parse(env, env_name)?;
    Ok(match (from_env, from_option) {
        (Some(t), _) => (t, SettingSource::Env),
        (None, Some(t)) => (t, SettingSource::Option),
        (None, None) => (T::default(), SettingSource::Default),
    })
}
