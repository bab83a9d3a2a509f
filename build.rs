//! Links the cdylib against the Node-API symbols provided by the host at load time.
fn main() {
    napi_build::setup();
}
