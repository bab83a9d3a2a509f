//! The relay connector for JS (the `c2c-bridge relay` CLI): a thin wrapper over
//! [`crate::relay::Relay`]. The connector runs on its own thread and tokio runtime owned by
//! Rust; nothing here blocks the JS thread longer than the initial connect.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use napi::Result;
use napi_derive::napi;

use super::error::{invalid_arg, to_js, JsCode};
use crate::relay::{self as core, Credentials, RelayConfig};

/// Options of [`JsRelay::start`].
#[napi(object)]
pub struct RelayOptions {
    /// The broker root directory (created if missing, as by a session).
    pub root: String,
    /// The NATS server URL, e.g. `nats://127.0.0.1:4222`.
    pub url: String,
    /// A credentials file (NATS `.creds`, or `user=`/`password=`, `nkey=`, `token=` lines;
    /// mode 0600). None: connect without credentials.
    pub creds: Option<String>,
    /// This node's name: 1–32 chars of `[A-Za-z0-9_-]`.
    pub node: String,
    /// Presence TTL in seconds (default 30).
    pub presence_ttl_secs: Option<f64>,
    /// Create this node's stream and the presence bucket when missing (default false; needs
    /// the server's permission).
    pub provision: Option<bool>,
    /// Receiving-side rate limit: burst per remote node → local recipient (default 20).
    pub rate_burst: Option<u32>,
    /// Receiving-side rate limit window in seconds (default 60).
    pub rate_window_secs: Option<f64>,
}

/// Counters of a running connector.
#[napi(object)]
pub struct RelayState {
    /// Envelopes published and acknowledged by JetStream.
    pub sent: f64,
    /// Envelopes received, stored locally and acked.
    pub received: f64,
    /// Envelopes rejected (bad subject or payload, a node claiming another).
    pub rejected: f64,
    /// Errors so far (the connector keeps retrying).
    pub errors: f64,
    /// The last error, in words.
    pub last_error: Option<String>,
    /// Whether the connector still runs.
    pub running: bool,
}

fn creds_of(path: Option<String>) -> std::result::Result<Credentials, napi::Error<JsCode>> {
    match path {
        None => Ok(Credentials::None),
        Some(p) => core::creds::read(std::path::Path::new(&p)).map_err(to_js),
    }
}

fn secs(v: Option<f64>, name: &str) -> std::result::Result<Option<Duration>, napi::Error<JsCode>> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => {
            Ok(Some(Duration::from_secs_f64(s)))
        }
        Some(_) => Err(invalid_arg(format!(
            "{name} must be a number of seconds in (0, 86400]"
        ))),
    }
}

/// A running relay connector for one broker root.
#[napi(js_name = "Relay")]
pub struct JsRelay {
    inner: Mutex<Option<core::Relay>>,
}

#[napi]
impl JsRelay {
    /// Start the connector: take the root's connector lock, connect, check the node's
    /// stream and the presence bucket, and run until [`JsRelay::stop`].
    ///
    /// Errors (`err.code`): `E_RELAY_BUSY` (another connector holds this root's lock: stand
    /// by and retry), `E_RELAY` (the server refused the credentials, the stream or bucket is
    /// missing),
    /// `E_INVALID_OPTION` (the creds file), `E_INVALID_ID` (node), `E_INVALID_ARG`,
    /// `E_ROOT_INSECURE`, `E_IO`.
    #[napi(factory, catch_unwind)]
    pub fn start(options: RelayOptions) -> Result<JsRelay, JsCode> {
        let creds = creds_of(options.creds)?;
        let mut cfg = RelayConfig::new(
            PathBuf::from(options.root),
            options.url,
            creds,
            options.node,
        );
        if let Some(t) = secs(options.presence_ttl_secs, "presenceTtlSecs")? {
            cfg.presence_ttl = t;
        }
        cfg.provision = options.provision.unwrap_or(false);
        if let Some(b) = options.rate_burst {
            cfg.rate.burst = b;
        }
        if let Some(w) = secs(options.rate_window_secs, "rateWindowSecs")? {
            cfg.rate.window_s = w.as_secs_f64();
        }
        cfg.rate = cfg
            .rate
            .validate()
            .map_err(|e| invalid_arg(format!("rate: {e}")))?;
        let relay = core::Relay::start(cfg).map_err(to_js)?;
        Ok(JsRelay {
            inner: Mutex::new(Some(relay)),
        })
    }

    /// The counters, and whether the connector still runs.
    #[napi(catch_unwind)]
    pub fn state(&self) -> RelayState {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_ref() {
            Some(r) => {
                let s = r.state();
                RelayState {
                    sent: s.sent as f64,
                    received: s.received as f64,
                    rejected: s.rejected as f64,
                    errors: s.errors as f64,
                    last_error: s.last_error,
                    running: r.is_running(),
                }
            }
            None => RelayState {
                sent: 0.0,
                received: 0.0,
                rejected: 0.0,
                errors: 0.0,
                last_error: None,
                running: false,
            },
        }
    }

    /// Stop cleanly (withdraw presence, flush acks, end the runtime, release the lock).
    /// Idempotent. Errors: `E_RELAY` with the error the connector ended with.
    #[napi(catch_unwind)]
    pub fn stop(&self) -> Result<(), JsCode> {
        let r = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        match r {
            Some(mut r) => r.stop().map_err(to_js),
            None => Ok(()),
        }
    }
}

/// Create the streams of `nodes` and the presence bucket on the server at `url` with the
/// operator's credentials file `creds` (see RELAY.md). Errors: `E_RELAY`,
/// `E_INVALID_OPTION`, `E_INVALID_ID`.
#[napi(catch_unwind)]
pub fn relay_provision(
    url: String,
    creds: Option<String>,
    nodes: Vec<String>,
    presence_ttl_secs: Option<f64>,
) -> Result<(), JsCode> {
    let creds = creds_of(creds)?;
    let ttl = secs(presence_ttl_secs, "presenceTtlSecs")?.unwrap_or(core::DEFAULT_PRESENCE_TTL);
    core::provision(&url, &creds, &nodes, ttl).map_err(to_js)
}
