//! Fuzz target `content_loader`: see harness.rs.

#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::content_loader(data));
