// Types of binding.js, the package entry: it re-exports napi-rs's generated loader (index.js)
// unchanged, so its types are the generated index.d.ts.
export * from './index.js';
