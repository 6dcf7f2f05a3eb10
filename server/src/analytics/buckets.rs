//! Time on a line, counted in buckets that grow by a quarter: bucket 0 is under 100 ms, bucket
//! `b` from 100 ms · 1.25^(b-1) up to the next, the last open-ended (about 20 minutes and more).
//! A median or p90 read from them is within 12% of the true one, whatever the number of
//! samples: what a writer needs to see that a line is skimmed or pored over, in a fixed number
//! of rollup rows per line.

/// How many buckets.
pub const COUNT: u8 = 44;
const BASE_MS: f64 = 100.0;
const GROWTH: f64 = 1.25;

/// The bucket of a time on screen, in milliseconds.
pub fn of(ms: u64) -> u8 {
    if (ms as f64) < BASE_MS {
        return 0;
    }
    let steps = ((ms as f64) / BASE_MS).ln() / GROWTH.ln();
    // `steps` is finite and non-negative here; the cast saturates.
    let bucket = (steps.floor() as u64).saturating_add(1);
    u8::try_from(bucket.min(u64::from(COUNT - 1))).unwrap_or(COUNT - 1)
}

/// Where a bucket starts, in milliseconds.
pub fn floor_ms(bucket: u8) -> f64 {
    if bucket == 0 {
        0.0
    } else {
        BASE_MS * GROWTH.powi(i32::from(bucket) - 1)
    }
}

/// The time a bucket stands for in a quantile: its geometric middle (50 ms for the first).
pub fn representative_ms(bucket: u8) -> u64 {
    let ms = if bucket == 0 {
        BASE_MS / 2.0
    } else {
        floor_ms(bucket) * GROWTH.sqrt()
    };
    ms.round() as u64
}

/// A bucket as the rollup's `detail` column: two digits, so rows sort by time.
pub fn detail(bucket: u8) -> String {
    format!("{bucket:02}")
}

/// The bucket a `detail` names; `None` for anything else (a row from elsewhere).
pub fn parse(detail: &str) -> Option<u8> {
    detail.parse().ok().filter(|b| *b < COUNT)
}

/// The `q` quantile (0..=1) of counts per bucket, as a time in milliseconds; `None` if empty.
pub fn quantile(counts: &[(u8, i64)], q: f64) -> Option<u64> {
    let total: i64 = counts.iter().map(|(_, n)| (*n).max(0)).sum();
    if total == 0 {
        return None;
    }
    let mut sorted = counts.to_vec();
    sorted.sort_unstable_by_key(|(b, _)| *b);
    // The smallest bucket whose cumulative count reaches q of the total.
    let wanted = ((total as f64) * q).ceil().max(1.0) as i64;
    let mut seen = 0;
    for (bucket, n) in sorted {
        seen += n.max(0);
        if seen >= wanted {
            return Some(representative_ms(bucket));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_grow_by_a_quarter_and_hold_their_times() {
        assert_eq!(of(0), 0);
        assert_eq!(of(99), 0);
        assert_eq!(of(100), 1);
        assert_eq!(of(124), 1);
        assert_eq!(of(125), 2);
        assert_eq!(of(u64::MAX), COUNT - 1);
        for ms in [150, 999, 1_000, 4_321, 60_000, 600_000] {
            let b = of(ms);
            assert!(floor_ms(b) <= ms as f64, "{ms} ms in bucket {b}");
            assert!(ms as f64 <= floor_ms(b + 1), "{ms} ms in bucket {b}");
            // The representative is within 12% of any time in its bucket.
            let r = representative_ms(b) as f64;
            assert!((r - ms as f64).abs() / (ms as f64) < 0.12, "{ms} ms ~ {r}");
        }
    }

    #[test]
    fn quantiles_come_from_cumulative_counts() {
        // 10 samples: 5 quick (bucket 1), 4 middling (bucket 10), 1 slow (bucket 20).
        let counts = [(20, 1), (1, 5), (10, 4)];
        assert_eq!(quantile(&counts, 0.5), Some(representative_ms(1)));
        assert_eq!(quantile(&counts, 0.9), Some(representative_ms(10)));
        assert_eq!(quantile(&counts, 1.0), Some(representative_ms(20)));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[(3, 0)], 0.5), None);
    }

    #[test]
    fn details_round_trip_and_refuse_strangers() {
        for b in 0..COUNT {
            assert_eq!(parse(&detail(b)), Some(b));
        }
        assert_eq!(parse("44"), None);
        assert_eq!(parse("x"), None);
        assert_eq!(parse(""), None);
    }
}
