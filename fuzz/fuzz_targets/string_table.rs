//! Fuzz target `string_table`: see harness.rs.

#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::string_table(data));
