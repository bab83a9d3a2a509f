//! `initDiagnostics` / `setDiagnosticsSink`: the napi side of [`crate::diagnostics`], and its
//! initialisation from `C2C_BRIDGE_LOG` when the addon is loaded (so the CLI writes diagnostics
//! to stderr with no code of its own).

use std::sync::Arc;

use napi::bindgen_prelude::{Object, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

use super::error::{to_js, JsCode};
use crate::diagnostics;

/// Lines waiting for the JS thread at most; past it, new lines are dropped (never block the
/// thread that logs, which may hold a broker lock).
const SINK_QUEUE: usize = 1_024;

/// The JS sink: `(line: string) => void`, unref'd (weak: it never keeps the process alive),
/// not callee-handled, with a bounded queue.
type SinkCallback =
    ThreadsafeFunction<String, Unknown<'static>, String, Status, false, true, SINK_QUEUE>;

/// Runs when the addon is loaded: `C2C_BRIDGE_LOG` set in the process environment turns
/// diagnostics on (to stderr). A bad value is reported on stderr once and ignored: loading the
/// addon never fails because of it.
#[napi(module_exports)]
pub fn init_at_load(_exports: Object) {
    if let Err(e) = diagnostics::init_from_env() {
        eprintln!("c2c-bridge: {e} (ignored)");
    }
}

/// Turn diagnostics on with an env-filter (`C2C_BRIDGE_LOG` syntax: `debug`,
/// `c2c_bridge::store=trace`, ...) or off (`""`, `"off"`); `filter` omitted: the process
/// environment's `C2C_BRIDGE_LOG` (unset: no change). Process-wide. Returns whether
/// diagnostics are on. Errors: `E_INVALID_OPTION` for a filter that does not parse (the
/// previous filter stays).
#[napi(catch_unwind)]
pub fn init_diagnostics(filter: Option<String>) -> napi::Result<bool, JsCode> {
    match filter {
        Some(f) => diagnostics::init(&f),
        None => diagnostics::init_from_env(),
    }
    .map_err(to_js)
}

/// Send diagnostic lines to `callback(line)` instead of stderr (`null`: back to stderr).
/// Process-wide, the last call wins. The callback runs on the JS thread, never keeps the
/// process alive, and an exception it throws is swallowed. At most 1 024 lines wait for it;
/// more are dropped. Lines carry no message text and no tool arguments.
#[napi(
    catch_unwind,
    ts_args_type = "callback: ((line: string) => void) | null"
)]
pub fn set_diagnostics_sink(callback: Option<SinkCallback>) {
    let Some(callback) = callback else {
        diagnostics::set_sink(None);
        return;
    };
    let tsfn = Arc::new(callback);
    diagnostics::set_sink(Some(Arc::new(move |line: &str| {
        let line = line.to_string();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // The return callback receives a JS exception, if any, as Err and drops it;
            // `call` (without a return callback) would make it fatal. A full queue drops the
            // line (Status::QueueFull).
            tsfn.call_with_return_value(
                line,
                ThreadsafeFunctionCallMode::NonBlocking,
                |_result, _env| Ok(()),
            );
        }));
    })));
}
