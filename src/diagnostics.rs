//! Developer diagnostics with `tracing`: off by default, turned on by `C2C_BRIDGE_LOG`.
//!
//! This is not `broker.log`. `broker.log` is c2c's audit format (one JSON line per broker
//! event, read by c2c and by users) and does not change. Diagnostics are for a maintainer
//! reading a field report: lock waits and timeouts ([`crate::store::lock`]), watcher errors
//! (`src/watch.rs`), inbound-gate and held-inbox decisions ([`crate::broker`]), parse-cache
//! misses ([`crate::store::cache`]), and each permission decision with its reason
//! ([`crate::policy::engine`]).
//!
//! # Turning it on
//!
//! `C2C_BRIDGE_LOG` takes `tracing-subscriber`'s env-filter syntax: `debug` (everything at
//! debug and above), `c2c_bridge::store=trace,c2c_bridge::policy=debug`, `warn`. Unset, empty
//! or `off`: nothing is installed and every event site costs one relaxed atomic load.
//! [`init_from_env`] reads the variable (the addon calls it when it is loaded); [`init`] sets a
//! filter directly (the plugin passes its `process.env` value, since under Bun run-time
//! changes of `process.env` do not reach native code). A filter can be changed later; the
//! first call installs the process-wide subscriber.
//!
//! # Where lines go
//!
//! One line per event (`<RFC 3339 time> <LEVEL> <target>: <message> <fields>`, no colours),
//! to stderr, or to the sink set with [`set_sink`] (the plugin forwards them to OpenCode's log).
//! Peer-controlled strings are recorded with `?` (Debug), which escapes control characters, so
//! a line never carries a raw terminal escape. Message text and tool arguments are never
//! recorded.
//!
//! # Process-wide
//!
//! `tracing` has one global subscriber per process, so the filter and the sink are
//! process-wide, shared by every `Broker` and plugin instance of the process (the last
//! [`set_sink`] wins).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::reload;
use tracing_subscriber::{EnvFilter, Registry};

use crate::error::{Error, Result};

/// The environment variable holding the filter: `C2C_BRIDGE_LOG`.
pub const ENV_LOG: &str = "C2C_BRIDGE_LOG";

/// A receiver of formatted lines (without the trailing newline). It is called on the thread
/// that emitted the event, possibly while a lock is held: it must return quickly and never
/// block (the napi sink queues into a bounded thread-safe function and drops on overflow).
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

static SINK: RwLock<Option<Sink>> = RwLock::new(None);
static FILTER: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();
static INSTALL: Mutex<()> = Mutex::new(());
static ON: AtomicBool = AtomicBool::new(false);

/// Send every later line to `sink` instead of stderr; `None`: back to stderr.
pub fn set_sink(sink: Option<Sink>) {
    *SINK.write().unwrap_or_else(|p| p.into_inner()) = sink;
}

/// Turn diagnostics on with the env-filter `filter` (see the module doc), or off with an
/// empty or `off` filter. Returns whether they are now on.
///
/// # Errors
/// [`Error::InvalidOption`] (`E_INVALID_OPTION`, option `C2C_BRIDGE_LOG`) when `filter` is not
/// valid env-filter syntax; the previous filter stays.
pub fn init(filter: &str) -> Result<bool> {
    let filter = filter.trim();
    let off = filter.is_empty() || filter.eq_ignore_ascii_case("off");
    let parsed = if off {
        EnvFilter::new("off")
    } else {
        EnvFilter::try_new(filter).map_err(|e| Error::InvalidOption {
            option: ENV_LOG.to_string(),
            reason: format!("not an env-filter ({e}): {filter:?}"),
        })?
    };
    let _one = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(handle) = FILTER.get() {
        handle.reload(parsed).map_err(|e| Error::InvalidOption {
            option: ENV_LOG.to_string(),
            reason: e.to_string(),
        })?;
        ON.store(!off, Ordering::Relaxed);
        return Ok(!off);
    }
    if off {
        // Nothing installed yet, nothing to turn off: keep the zero-cost path.
        return Ok(false);
    }
    let (layer, handle) = reload::Layer::new(parsed);
    let subscriber = Registry::default().with(layer).with(
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(|| LineWriter(Vec::new())),
    );
    if tracing::subscriber::set_global_default(subscriber).is_err() {
        // Someone else (an embedding Rust program) owns the global subscriber: theirs wins.
        return Ok(false);
    }
    let _ = FILTER.set(handle);
    ON.store(true, Ordering::Relaxed);
    Ok(true)
}

/// [`init`] with the value of `C2C_BRIDGE_LOG` in the process environment. Unset: no change
/// (and nothing installed if nothing was); returns whether diagnostics are on.
///
/// # Errors
/// As [`init`].
pub fn init_from_env() -> Result<bool> {
    match std::env::var(ENV_LOG) {
        Ok(v) => init(&v),
        Err(_) => Ok(ON.load(Ordering::Relaxed)),
    }
}

/// Collects one formatted event (the fmt layer writes it with one `write_all`) and hands it to
/// the sink, or to stderr, when dropped.
struct LineWriter(Vec<u8>);

impl Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let sink = SINK.read().unwrap_or_else(|p| p.into_inner()).clone();
        match sink {
            Some(sink) => {
                let text = String::from_utf8_lossy(&self.0);
                sink(text.trim_end_matches('\n'));
            }
            // Best effort: a closed stderr must not become an error anywhere.
            None => {
                let _ = std::io::stderr().lock().write_all(&self.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_filters_are_invalid_options_and_off_installs_nothing() {
        let e = init("c2c_bridge=loud").unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::InvalidOption);
        assert!(e.to_string().contains(ENV_LOG), "{e}");
        // Turning off before anything was installed keeps the zero-cost path (no global
        // subscriber is set by this test, so other tests in this process are unaffected).
        assert!(!init("").unwrap());
        assert!(!init(" OFF ").unwrap());
        assert!(FILTER.get().is_none());
    }
}
