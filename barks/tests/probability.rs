//! The probability table within statistical bounds: 100,000 fires per cue
//! that reach the roll, measured plays / attempts within ±5 binomial sigma
//! of the table (section 4.6: "with the indicators at 1, the probability in
//! the table is the one you get").
#![allow(clippy::unwrap_used)]

mod common;

use banter_barks::{Cue, FireOutcome, Payload, Reason, SplitMix64};
use common::*;

#[test]
fn probability_table_is_what_you_get() {
    const FIRES: u32 = 100_000;
    let table: Vec<(Cue, f64)> = Cue::ALL.iter().map(|c| (*c, c.probability())).collect();
    assert_eq!(
        table.iter().map(|(_, p)| *p).collect::<Vec<_>>(),
        [
            0.15, 0.25, 0.40, 0.30, 0.25, 0.30, 0.15, 0.35, 0.30, 0.45, 0.35, 0.90, 0.90, 1.00
        ]
    );
    for (i, (cue, p)) in table.into_iter().enumerate() {
        let w = World::new();
        // Lines with no cooldown, so every fire reaches the roll.
        let mut d = started(pool_catalog(cue, 4, 0, 1), secs(0), &w);
        let mut rng = SplitMix64::new(0xB4_2C + i as u64);
        let mut played = 0u32;
        for k in 0..FIRES {
            let now = secs(10 * u64::from(k + 1));
            match d.fire(now, cue, &Payload::EMPTY, &w.m, &mut rng) {
                FireOutcome::Played { line, .. } => {
                    played += 1;
                    d.line_finished(line);
                }
                FireOutcome::Rejected(Reason::Roll { .. }) => {}
                FireOutcome::Rejected(r) => panic!("{cue}: every fire must reach the roll: {r:?}"),
            }
        }
        let n = f64::from(FIRES);
        let measured = f64::from(played) / n;
        let sigma = (p * (1.0 - p) / n).sqrt();
        assert!(
            (measured - p).abs() <= 5.0 * sigma + 1e-12,
            "{cue}: measured {measured:.4}, table {p:.2}, 5 sigma {:.4}",
            5.0 * sigma
        );
        if p == 1.0 {
            assert_eq!(played, FIRES);
        }
    }
}
