//! Local policy: decisions whose inputs are typed and local (DESIGN.md, "Plugin side").
//! Message text is never an input here.

pub mod guardrail;
