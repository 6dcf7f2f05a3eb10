//! `banter-sim barks` end to end: 10 simulated hours with seed 1 reproduce
//! the article's die figures to two decimals, and the deck beats them; the
//! lines are heard in the player's locale.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use banter_barks::{BarkCatalog, Cue};
use banter_dialogue::locale::{Locale, Locales};
use banter_sim::barks::{LoadCatalog, SimConfig, load_locales, localize_catalog, simulate};

fn catalog() -> BarkCatalog {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../content/barks/catalog.json");
    BarkCatalog::load(path).unwrap().catalog
}

fn round(x: f64, places: i32) -> f64 {
    let m = 10f64.powi(places);
    (x * m).round() / m
}

#[test]
fn ten_hours_seed_1_matches_the_article() {
    let cfg = SimConfig {
        hours: 10.0,
        seed: 1,
        ..SimConfig::default()
    };
    let r = simulate(catalog(), &cfg);
    let article = [(6u32, 0.72), (9, 0.54), (13, 0.40)];
    assert_eq!(r.pools.len(), 3);
    for (p, (n, within_four)) in r.pools.iter().zip(article) {
        assert_eq!(p.n, n);
        // Exact, and measured by simulation, to two decimals.
        assert_eq!(
            round(p.die_exact.repeat_within_four, 2),
            within_four,
            "n={n}"
        );
        assert_eq!(
            round(p.die_measured.repeat_within_four, 2),
            within_four,
            "n={n}"
        );
        assert!(
            (p.die_measured.expected_first_repeat - p.die_exact.expected_first_repeat).abs() < 0.01
        );
        assert_eq!(p.die_exact.earliest_first_repeat, 2);
        // The deck: no repeat within four picks, none before all n heard,
        // never back to back.
        assert_eq!(p.deck_measured.repeat_within_four, 0.0);
        assert_eq!(p.deck_measured.earliest_first_repeat, n + 1);
        assert!(p.deck_min_repeat_distance >= 2);
    }
    // "That comes to 3.8" for the 6 waiting-for-a-bite lines.
    assert_eq!(round(r.pools[0].die_exact.expected_first_repeat, 1), 3.8);
    assert_eq!(round(r.pools[0].die_measured.expected_first_repeat, 1), 3.8);

    let s = &r.session;
    assert!(s.idle_minutes > 30.0);
    assert!(
        s.idle_lines_per_minute <= 0.84,
        "{}",
        s.idle_lines_per_minute
    );
    assert!((s.idle_ceiling_per_minute - 0.84).abs() < 1e-12);
    for c in &s.cues {
        assert!(c.fires > 0, "{} never fired", c.cue);
        assert!(c.played > 0, "{} never played", c.cue);
        assert!(c.played <= c.reached_roll && c.reached_roll <= c.fires);
    }
    let quest = s.cues.iter().find(|c| c.cue == Cue::QuestHandedIn).unwrap();
    assert_eq!(quest.measured_probability, Some(1.0));
    // No line repeats inside its 300 s cooldown.
    assert!(s.shortest_repeat_gap.as_ref().unwrap().seconds >= 300.0);
    assert!(s.never_heard.len() <= 3, "{:?}", s.never_heard);
}

#[test]
fn same_seed_same_session() {
    let cfg = SimConfig {
        hours: 2.0,
        seed: 7,
        trials: 2_000,
    };
    let a = simulate(catalog(), &cfg);
    let b = simulate(catalog(), &cfg);
    assert_eq!(a, b);
    let c = simulate(catalog(), &SimConfig { seed: 8, ..cfg });
    assert_ne!(a.session, c.session);
}

#[test]
fn cli_json_is_one_object() {
    let out = Command::new(env!("CARGO_BIN_EXE_banter-sim"))
        .args([
            "barks", "--hours", "1", "--seed", "3", "--trials", "1000", "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["seed"], 3);
    assert_eq!(v["session"]["cues"].as_array().unwrap().len(), 14);
    assert_eq!(v["pools"].as_array().unwrap().len(), 3);
    assert_eq!(v["session"]["idle_ceiling_per_minute"], 0.84);
}

#[test]
fn cli_table_and_errors() {
    let bin = env!("CARGO_BIN_EXE_banter-sim");
    let out = Command::new(bin)
        .args(["barks", "--hours", "0.5", "--trials", "100"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("WaitingForBite"));
    assert!(text.contains("lines per idle minute"));
    let out = Command::new(bin)
        .args(["barks", "--catalog", "/nonexistent.json"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read bark catalog"));
    let out = Command::new(bin)
        .args(["barks", "--hours", "-1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

fn content() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../content")
}

fn has_kana(text: &str) -> bool {
    text.chars().any(|c| ('\u{3040}'..='\u{30ff}').contains(&c))
}

#[test]
fn barks_are_heard_in_the_players_locale() {
    let locales = load_locales(&content()).unwrap();
    let source = catalog();
    let ja = Locale::parse("ja").unwrap();
    let (japanese, translated) = localize_catalog(source.clone(), &locales, &ja);
    assert_eq!(translated, source.lines().len() + source.unplaced().len());
    let table = &locales.tables[&ja];
    for line in japanese.lines() {
        assert_eq!(
            Some(line.text.as_str()),
            table.translation(&format!("bark:{}", line.id)),
            "{}",
            line.id
        );
    }
    for cue in Cue::ALL {
        assert_eq!(japanese.pool(cue), source.pool(cue), "the same pools");
    }
    let cfg = SimConfig {
        hours: 1.0,
        seed: 3,
        trials: 100,
    };
    let heard = simulate(japanese, &cfg).first_heard;
    assert!(!heard.is_empty());
    assert!(heard.iter().all(|h| has_kana(&h.text)), "{heard:?}");

    // A locale with a table only for its parent reads the parent's; the pseudo-locale its own.
    let (ja_jp, _) = localize_catalog(source.clone(), &locales, &Locale::parse("ja-JP").unwrap());
    assert_eq!(ja_jp.lines()[0].text, table_text(&locales, &ja, &source));
    let (pseudo, _) = localize_catalog(source.clone(), &locales, &Locale::parse("en-XA").unwrap());
    assert_eq!(
        pseudo.lines()[0].text,
        banter_dialogue::locale::pseudo(&source.lines()[0].text)
    );
    // A locale without a table keeps the source.
    let (french, translated) =
        localize_catalog(source.clone(), &locales, &Locale::parse("fr").unwrap());
    assert_eq!((translated, french), (0, source));
}

/// The Japanese table's text of the catalog's first line.
fn table_text(locales: &Locales, ja: &Locale, source: &BarkCatalog) -> String {
    let id = format!("bark:{}", source.lines()[0].id);
    locales.tables[ja].translation(&id).unwrap().to_owned()
}

#[test]
fn cli_speaks_the_locale_asked_for() {
    let bin = env!("CARGO_BIN_EXE_banter-sim");
    let run = |locale: &str| {
        Command::new(bin)
            .args([
                "barks", "--hours", "0.5", "--trials", "100", "--locale", locale,
            ])
            .output()
            .unwrap()
    };
    let out = run("ja");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let heard: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("first lines heard (ja):"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(!heard.is_empty(), "{text}");
    assert!(heard.iter().all(|l| has_kana(l)), "{heard:#?}");
    let out = run("en-XA");
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains(" ~·~"));
    let out = run("not a tag");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("BCP 47"));
}
