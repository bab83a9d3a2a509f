//! The options of opening a [`crate::broker::Broker`] and their resolution into
//! [`BrokerSettings`]: defaults applied, the environment read, every range checked.
//!
//! Two callers give these options: Rust ([`OpenOptions`], already typed) and JS
//! (`Broker.open({...})`, numbers as f64: [`OpenNumbers`] checks them first). The table of
//! defaults, units, ranges and environment variables is in the [`crate::config`] module doc.

use std::path::PathBuf;
use std::time::Duration;

use super::env::Environment;
use super::vars;
use crate::error::{Error, Result};
use crate::policy::inbound::InboundMode;
use crate::policy::rate::RateConfig;

/// Default maximum message size: 16 KiB of UTF-8.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024;
/// Default time to wait for a sidecar lock.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);
/// Default held-inbox capacity.
pub const DEFAULT_HELD_CAP: usize = 100;
/// Default time a held message waits before it expires.
pub const DEFAULT_HELD_TTL: Duration = Duration::from_secs(300);

/// How to open a [`crate::broker::Broker`].
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// The session id to bind (OpenCode's `ses_…`). Validated as a file-name stem.
    pub session_id: String,
    /// The alias to register. Required unless `attach` is set.
    pub alias: Option<String>,
    /// An explicit broker root; else c2c's resolution (see [`crate::store::root`]).
    pub root: Option<PathBuf>,
    /// The project directory used for c2c's repository fingerprint and stored in the
    /// registration (`directory`). Default: the current directory.
    pub directory: Option<PathBuf>,
    /// The pid to register. Default: this process (the addon runs inside OpenCode).
    pub pid: Option<u32>,
    /// `plugin_version` to record.
    pub plugin_version: Option<String>,
    /// When the alias is held by another live session, register under the free alternative
    /// the collision rule names (`<alias>-2`, …) instead of failing.
    pub auto_alias: bool,
    /// `client_type` to record (default `"opencode"`).
    pub client_type: Option<String>,
    /// Attach to an existing registration of `session_id` instead of registering: the CLI
    /// acting for the session named by `C2C_MCP_SESSION_ID`. [`crate::broker::Broker::close`]
    /// then does not unregister.
    pub attach: bool,
    /// Maximum content size in bytes (default [`DEFAULT_MAX_MESSAGE_BYTES`]). At least 1.
    pub max_message_bytes: Option<usize>,
    /// Lock wait (default [`DEFAULT_LOCK_TIMEOUT`]).
    pub lock_timeout: Option<Duration>,
    /// Where the environment variables of the open come from: root resolution
    /// (`C2C_MCP_BROKER_ROOT`, `C2C_STATE_HOME`, `XDG_STATE_HOME`, `HOME`),
    /// `C2C_BRIDGE_INBOUND` and `C2C_PERMISSION_TTL`. Default: the process environment.
    pub env: Environment,
    /// Inbound policy option (`accept`|`auto`|`hold`|`refuse`); `C2C_BRIDGE_INBOUND` from
    /// [`OpenOptions::env`] overrides it. Default `accept`.
    pub inbound: Option<String>,
    /// Held-inbox capacity (default [`DEFAULT_HELD_CAP`] messages).
    pub held_cap: Option<usize>,
    /// How long a held message waits before it expires (default [`DEFAULT_HELD_TTL`]).
    /// Not zero.
    pub held_ttl: Option<Duration>,
    /// Per sender→recipient rate limit (default: burst 20, refilled over 60 s).
    pub rate: Option<RateConfig>,
    /// Active pending-reply slots allowed per requester alias (default 16, c2c's). At least 1.
    pub pending_per_alias_cap: Option<usize>,
    /// Active pending-reply slots allowed in the root (default 1024, c2c's). At least 1.
    pub pending_global_cap: Option<usize>,
}

/// The settings of one broker handle: every default applied, the environment read once,
/// every value in range. [`crate::broker::Broker::open`] takes only these.
#[derive(Debug, Clone)]
pub struct BrokerSettings {
    /// Maximum content size, bytes (≥ 1).
    pub max_message_bytes: usize,
    /// Lock wait.
    pub lock_timeout: Duration,
    /// The inbound policy in force (option, overridden by `C2C_BRIDGE_INBOUND`).
    pub inbound: InboundMode,
    /// Held-inbox capacity, messages.
    pub held_cap: usize,
    /// How long a held message waits before it expires (not zero).
    pub held_ttl: Duration,
    /// The rate limit, validated ([`RateConfig::validate`]).
    pub rate: RateConfig,
    /// Pending-reply caps (each ≥ 1).
    pub pending_caps: crate::pending::Caps,
    /// The TTL of new pending-reply slots, from `C2C_PERMISSION_TTL` (see
    /// [`crate::pending::parse_ttl`]); its `invalid` / `clamped` marks are for the audit log.
    pub pending_ttl: crate::pending::Ttl,
}

fn invalid(option: &str, reason: impl Into<String>) -> Error {
    Error::InvalidOption {
        option: option.to_string(),
        reason: reason.into(),
    }
}

impl BrokerSettings {
    /// Resolve the settings of `opts`, reading its [`Environment`] once.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the option: `maxMessageBytes` 0, an unknown `inbound`
    /// (option or `C2C_BRIDGE_INBOUND`), a `rate` out of range, `heldTtlSecs` zero, a pending
    /// cap of 0. A bad `C2C_PERMISSION_TTL` is not an error (see [`crate::pending::parse_ttl`]).
    pub fn resolve(opts: &OpenOptions) -> Result<BrokerSettings> {
        let max_message_bytes = opts.max_message_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES);
        if max_message_bytes == 0 {
            return Err(invalid("maxMessageBytes", "must be at least 1"));
        }
        let (inbound, _) = InboundMode::resolve(
            opts.inbound.as_deref(),
            opts.env.var(vars::INBOUND).as_deref(),
        )
        .map_err(|e| invalid("inbound", e.to_string()))?;
        let rate = opts
            .rate
            .unwrap_or_default()
            .validate()
            .map_err(|e| invalid("rate", e.to_string()))?;
        let held_ttl = opts.held_ttl.unwrap_or(DEFAULT_HELD_TTL);
        if held_ttl.is_zero() {
            return Err(invalid("heldTtlSecs", "must be positive"));
        }
        let cap = |v: Option<usize>, name: &str, default: usize| match v {
            Some(0) => Err(invalid(name, "must be at least 1")),
            Some(n) => Ok(n),
            None => Ok(default),
        };
        let defaults = crate::pending::Caps::default();
        let pending_caps = crate::pending::Caps {
            per_alias: cap(
                opts.pending_per_alias_cap,
                "pendingPerAliasCap",
                defaults.per_alias,
            )?,
            global: cap(opts.pending_global_cap, "pendingGlobalCap", defaults.global)?,
        };
        Ok(BrokerSettings {
            max_message_bytes,
            lock_timeout: opts.lock_timeout.unwrap_or(DEFAULT_LOCK_TIMEOUT),
            inbound,
            held_cap: opts.held_cap.unwrap_or(DEFAULT_HELD_CAP),
            held_ttl,
            rate,
            pending_caps,
            pending_ttl: crate::pending::parse_ttl(opts.env.var(vars::PERMISSION_TTL).as_deref()),
        })
    }
}

/// The numeric options of `Broker.open({...})` as JS gives them: f64, unchecked. JS numbers
/// are f64, so without [`OpenNumbers::apply`] -1 would wrap to 4294967295 and 1.5 would
/// truncate. Each field's range is in the [`crate::config`] table ("`Broker.open` range").
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenNumbers {
    /// `pid`: a whole number from 1 to 2147483647.
    pub pid: Option<f64>,
    /// `maxMessageBytes`, bytes: whole, 1 to 67108864 (64 MiB).
    pub max_message_bytes: Option<f64>,
    /// `lockTimeoutMs`, milliseconds: whole, 1 to 3600000.
    pub lock_timeout_ms: Option<f64>,
    /// `heldCap`, messages: whole, 1 to 1000000.
    pub held_cap: Option<f64>,
    /// `heldTtlSecs`, seconds (fractions kept): above 0, at most 31536000 (a year).
    pub held_ttl_secs: Option<f64>,
    /// `rateBurst`, messages: whole, 1 to 4294967295.
    pub rate_burst: Option<f64>,
    /// `rateWindowSecs`, seconds (fractions kept): above 0; then 0.1 to 86400
    /// ([`RateConfig::validate`]).
    pub rate_window_secs: Option<f64>,
    /// `pendingPerAliasCap`, slots: whole, 1 to 1000000.
    pub pending_per_alias_cap: Option<f64>,
    /// `pendingGlobalCap`, slots: whole, 1 to 10000000.
    pub pending_global_cap: Option<f64>,
}

/// A JS number option that must be a whole number in `min..=max`.
fn whole(name: &str, v: Option<f64>, min: u64, max: u64) -> Result<Option<u64>> {
    match v {
        None => Ok(None),
        Some(x) if x.is_finite() && x.fract() == 0.0 && x >= min as f64 && x <= max as f64 => {
            Ok(Some(x as u64))
        }
        Some(_) => Err(invalid(
            name,
            format!("must be a whole number from {min} to {max}"),
        )),
    }
}

impl OpenNumbers {
    /// Check every number against its range and set the typed fields of `opts`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the first option out of range (checked in the order
    /// `rateWindowSecs`, `heldTtlSecs`, `rateBurst`, `pid`, `maxMessageBytes`,
    /// `lockTimeoutMs`, `heldCap`, `pendingPerAliasCap`, `pendingGlobalCap`).
    pub fn apply(&self, opts: &mut OpenOptions) -> Result<()> {
        let window = match self.rate_window_secs {
            Some(w) if !(w.is_finite() && w > 0.0) => {
                return Err(invalid(
                    "rateWindowSecs",
                    "must be a positive number of seconds",
                ))
            }
            w => w,
        };
        let held_ttl = match self.held_ttl_secs {
            Some(t) if !(t.is_finite() && t > 0.0 && t <= 31_536_000.0) => {
                return Err(invalid(
                    "heldTtlSecs",
                    "must be a number of seconds from 0 to 31536000 (a year)",
                ))
            }
            t => t.map(Duration::from_secs_f64),
        };
        let burst = whole("rateBurst", self.rate_burst, 1, u32::MAX as u64)?;
        if let Some(pid) = whole("pid", self.pid, 1, i32::MAX as u64)? {
            opts.pid = Some(pid as u32);
        }
        if let Some(n) = whole("maxMessageBytes", self.max_message_bytes, 1, 64 << 20)? {
            opts.max_message_bytes = Some(n as usize);
        }
        if let Some(ms) = whole("lockTimeoutMs", self.lock_timeout_ms, 1, 3_600_000)? {
            opts.lock_timeout = Some(Duration::from_millis(ms));
        }
        if let Some(n) = whole("heldCap", self.held_cap, 1, 1_000_000)? {
            opts.held_cap = Some(n as usize);
        }
        if held_ttl.is_some() {
            opts.held_ttl = held_ttl;
        }
        if burst.is_some() || window.is_some() {
            let d = opts.rate.unwrap_or_default();
            opts.rate = Some(RateConfig {
                burst: burst.map(|b| b as u32).unwrap_or(d.burst),
                window_s: window.unwrap_or(d.window_s),
                ..d
            });
        }
        if let Some(n) = whole(
            "pendingPerAliasCap",
            self.pending_per_alias_cap,
            1,
            1_000_000,
        )? {
            opts.pending_per_alias_cap = Some(n as usize);
        }
        if let Some(n) = whole("pendingGlobalCap", self.pending_global_cap, 1, 10_000_000)? {
            opts.pending_global_cap = Some(n as usize);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(n: OpenNumbers) -> Result<OpenOptions> {
        let mut o = OpenOptions::default();
        n.apply(&mut o).map(|()| o)
    }

    fn option_of(r: Result<OpenOptions>) -> String {
        match r {
            Err(Error::InvalidOption { option, .. }) => option,
            other => panic!("expected InvalidOption, got {other:?}"),
        }
    }

    #[test]
    fn js_numbers_out_of_range_name_their_option() {
        for (n, name) in [
            (
                OpenNumbers {
                    held_cap: Some(-1.0),
                    ..Default::default()
                },
                "heldCap",
            ),
            (
                OpenNumbers {
                    max_message_bytes: Some(1.5),
                    ..Default::default()
                },
                "maxMessageBytes",
            ),
            (
                OpenNumbers {
                    lock_timeout_ms: Some(f64::NAN),
                    ..Default::default()
                },
                "lockTimeoutMs",
            ),
            (
                OpenNumbers {
                    held_ttl_secs: Some(31_536_001.0),
                    ..Default::default()
                },
                "heldTtlSecs",
            ),
            (
                OpenNumbers {
                    rate_window_secs: Some(0.0),
                    ..Default::default()
                },
                "rateWindowSecs",
            ),
            (
                OpenNumbers {
                    pid: Some(0.0),
                    ..Default::default()
                },
                "pid",
            ),
            (
                OpenNumbers {
                    pending_global_cap: Some(10_000_001.0),
                    ..Default::default()
                },
                "pendingGlobalCap",
            ),
        ] {
            assert_eq!(option_of(apply(n)), name);
        }
    }

    #[test]
    fn js_numbers_in_range_become_typed_values() {
        let o = apply(OpenNumbers {
            pid: Some(42.0),
            max_message_bytes: Some(4096.0),
            lock_timeout_ms: Some(250.0),
            held_cap: Some(7.0),
            held_ttl_secs: Some(0.5),
            rate_burst: Some(3.0),
            pending_per_alias_cap: Some(2.0),
            pending_global_cap: Some(9.0),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(o.pid, Some(42));
        assert_eq!(o.max_message_bytes, Some(4096));
        assert_eq!(o.lock_timeout, Some(Duration::from_millis(250)));
        assert_eq!(o.held_cap, Some(7));
        assert_eq!(o.held_ttl, Some(Duration::from_millis(500)));
        // A burst alone keeps the default window.
        assert_eq!(
            o.rate,
            Some(RateConfig {
                burst: 3,
                ..RateConfig::default()
            })
        );
        assert_eq!(
            (o.pending_per_alias_cap, o.pending_global_cap),
            (Some(2), Some(9))
        );
        assert!(apply(OpenNumbers::default()).unwrap().rate.is_none());
    }

    #[test]
    fn settings_apply_defaults_and_read_the_given_environment_only() {
        let s = BrokerSettings::resolve(&OpenOptions {
            env: Environment::empty(),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES);
        assert_eq!(s.lock_timeout, DEFAULT_LOCK_TIMEOUT);
        assert_eq!(s.inbound, InboundMode::Accept);
        assert_eq!(
            (s.held_cap, s.held_ttl),
            (DEFAULT_HELD_CAP, DEFAULT_HELD_TTL)
        );
        assert_eq!(s.rate, RateConfig::default());
        assert_eq!(s.pending_caps, crate::pending::Caps::default());
        assert_eq!(s.pending_ttl.secs, 600.0);

        let s = BrokerSettings::resolve(&OpenOptions {
            inbound: Some("accept".into()),
            env: Environment::from_pairs([
                ("C2C_BRIDGE_INBOUND", "refuse"),
                ("C2C_PERMISSION_TTL", "30"),
            ]),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.inbound, InboundMode::Refuse);
        assert_eq!(s.pending_ttl.secs, 30.0);
    }

    #[test]
    fn settings_refuse_zero_and_unknown_values() {
        let bad =
            |o: OpenOptions| option_of(BrokerSettings::resolve(&o).map(|_| OpenOptions::default()));
        let base = || OpenOptions {
            env: Environment::empty(),
            ..Default::default()
        };
        assert_eq!(
            bad(OpenOptions {
                max_message_bytes: Some(0),
                ..base()
            }),
            "maxMessageBytes"
        );
        assert_eq!(
            bad(OpenOptions {
                inbound: Some("acept".into()),
                ..base()
            }),
            "inbound"
        );
        assert_eq!(
            bad(OpenOptions {
                held_ttl: Some(Duration::ZERO),
                ..base()
            }),
            "heldTtlSecs"
        );
        assert_eq!(
            bad(OpenOptions {
                pending_global_cap: Some(0),
                ..base()
            }),
            "pendingGlobalCap"
        );
        assert_eq!(
            bad(OpenOptions {
                rate: Some(RateConfig {
                    window_s: 0.01,
                    ..RateConfig::default()
                }),
                ..base()
            }),
            "rate"
        );
    }
}
