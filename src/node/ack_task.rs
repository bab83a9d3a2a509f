//! `Broker.acknowledgeAsync`: the acknowledgement run on the libuv thread pool.
//!
//! An acknowledgement is three fsync'd file replaces (the inbox, the archive, the sender's
//! receipt), 1–4 ms on a good disk and tens of ms on a busy one. The plugin acknowledges
//! right after OpenCode stored the injected message, on OpenCode's main thread, while
//! OpenCode is delivering that message to its clients: there it would hold up the JS loop
//! for the whole write. As an async work item only the argument conversion runs on the
//! main thread; the promise settles on it afterwards.

use std::sync::Arc;

use napi::bindgen_prelude::{JsObjectValue, JsValue};
use napi::{Env, Task};

use crate::broker as core;
use crate::receipts::Status;

/// One acknowledgement for the pool: the broker handle (shared, so `close()` on the main
/// thread meanwhile makes it fail with `E_CLOSED` rather than use freed state), the ids and
/// the receipt status.
pub struct AcknowledgeTask {
    pub(super) broker: Arc<core::Broker>,
    pub(super) message_ids: Vec<String>,
    pub(super) status: Status,
}

impl Task for AcknowledgeTask {
    type Output = crate::Result<Vec<String>>;
    type JsValue = Vec<String>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.broker.acknowledge(&self.message_ids, self.status))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        match output {
            Ok(ids) => Ok(ids),
            Err(e) => {
                // Reject with an error carrying the same stable `code` the synchronous call
                // throws.
                let code = e.code().as_str();
                let mut err = env.create_error(napi::Error::from_reason(e.to_string()))?;
                err.set_named_property("code", code)?;
                Err(napi::Error::from(err.to_unknown()))
            }
        }
    }
}
