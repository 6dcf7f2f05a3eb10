//! Internal failures reach a client as a stable code and a reference, never as their text.
//!
//! A store's or driver's error message says things a player must not see (addresses, SQL,
//! "expected to read 5 bytes, got 0 bytes at EOF") and that tell an attacker how the server is
//! built. Every such failure is logged here under a fresh reference, and the client gets a
//! generic message carrying only that reference, which support can grep the logs for.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A per-process secret mixed into references, so they are not a guessable counter.
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    })
}

/// A reference no other incident of this process shares: 16 lowercase hex digits.
pub fn reference() -> String {
    // SplitMix64 over a counter: distinct for every call (a bijection), well spread.
    let mut z = seed().wrapping_add(
        NEXT.fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    format!("{:016x}", z ^ (z >> 31))
}

/// Logs an internal failure under a new reference and returns the reference.
pub fn report(what: &str, error: &dyn std::fmt::Display) -> String {
    let reference = reference();
    tracing::error!(reference = %reference, what, error = %error, "internal failure");
    reference
}

/// Logs an outage (a retryable store failure: expected during a database restart) under a new
/// reference and returns the reference.
pub fn report_outage(what: &str, error: &dyn std::fmt::Display) -> String {
    let reference = reference();
    tracing::warn!(reference = %reference, what, error = %error, "store unavailable");
    reference
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_distinct_and_sixteen_hex_digits() {
        let refs: std::collections::HashSet<String> = (0..10_000).map(|_| reference()).collect();
        assert_eq!(refs.len(), 10_000);
        assert!(
            refs.iter()
                .all(|r| r.len() == 16 && r.bytes().all(|b| b.is_ascii_hexdigit()))
        );
    }
}
