//! Catalog checks at load time, and the real catalog.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use banter_barks::catalog::{FactList, Impossible};
use banter_barks::{
    BarkCatalog, CatalogError, CatalogWarning, Cue, LoadError, PayloadKey, Priority,
};
use banter_player::{BoatState, Effective, Fact, FishingState, State, Tag};
use common::*;
use serde_json::{Value, json};

fn load(rows: Vec<Value>) -> Result<banter_barks::Loaded, LoadError> {
    BarkCatalog::from_json(&json!({ "lines": rows }).to_string())
}

fn errors(rows: Vec<Value>) -> Vec<CatalogError> {
    match load(rows) {
        Err(LoadError::Invalid { errors, .. }) => errors,
        other => panic!("expected errors, got {other:?}"),
    }
}

/// The errors of a catalog of [`every_cue`]'s lines and `row(id, cues, extra)`.
fn errors_with_row(id: &str, cues: &[Cue], extra: Value) -> Vec<CatalogError> {
    errors(with(every_cue(), row(id, cues, extra)))
}

fn warnings(rows: Vec<Value>) -> Vec<CatalogWarning> {
    load(rows).unwrap().warnings
}

/// One plain line per cue, so no MissingMoment noise.
fn every_cue() -> Vec<Value> {
    Cue::ALL
        .iter()
        .map(|c| row(&format!("base.{}", c.name()), &[*c], json!({})))
        .collect()
}

fn with(mut rows: Vec<Value>, extra: Value) -> Vec<Value> {
    rows.push(extra);
    rows
}

#[test]
fn missing_moment_is_reported_per_cue() {
    let w = warnings(vec![row("a", &[Cue::LandFish], json!({}))]);
    let missing: Vec<Cue> = w
        .iter()
        .filter_map(|w| match w {
            CatalogWarning::MissingMoment { cue } => Some(*cue),
            _ => None,
        })
        .collect();
    assert_eq!(missing.len(), 13);
    assert!(!missing.contains(&Cue::LandFish));
    assert!(warnings(every_cue()).is_empty());
}

#[test]
fn unknown_names_are_typed_errors_with_the_row_id() {
    let e = errors_with_row(
        "bad",
        &[Cue::Cast],
        json!({"require": ["Fishing.Cast"], "forbid": ["Sprnting"]}),
    );
    assert_eq!(
        e,
        vec![
            CatalogError::UnknownFact {
                id: "bad".into(),
                list: FactList::Require,
                name: "Fishing.Cast".into()
            },
            CatalogError::UnknownFact {
                id: "bad".into(),
                list: FactList::Forbid,
                name: "Sprnting".into()
            },
        ]
    );
    let mut bad_cue = row("bad", &[], json!({"cues": ["Fishing.CatchFail"]}));
    bad_cue["cues"] = json!(["CatchFail"]);
    let e = errors(with(every_cue(), bad_cue));
    assert_eq!(
        e,
        vec![CatalogError::UnknownCue {
            id: "bad".into(),
            name: "CatchFail".into()
        }]
    );
    let e = errors_with_row(
        "bad",
        &[Cue::LandFish],
        json!({"match": {"rarity": "Common"}}),
    );
    assert_eq!(
        e,
        vec![CatalogError::UnknownPayloadKey {
            id: "bad".into(),
            key: "rarity".into()
        }]
    );
}

#[test]
fn contradictions_and_impossible_requires() {
    let e = errors_with_row(
        "both",
        &[Cue::SailingDwell],
        json!({"require": ["Night"], "forbid": ["Night"]}),
    );
    assert_eq!(
        e,
        vec![CatalogError::Contradiction {
            id: "both".into(),
            fact: Fact::Tag(Tag::Night)
        }]
    );
    let e = errors_with_row(
        "two",
        &[Cue::LandFish],
        json!({"require": ["Fishing.Casted", "Fishing.Minigame"]}),
    );
    assert_eq!(
        e,
        vec![CatalogError::SameOwner {
            id: "two".into(),
            first: State::Fishing(FishingState::Casted),
            second: State::Fishing(FishingState::Minigame),
        }]
    );
    let e = errors_with_row(
        "talk",
        &[Cue::LandFish],
        json!({"require": ["Dialogue.Talking"]}),
    );
    assert!(
        matches!(&e[..], [CatalogError::NeverAvailable { id, .. }] if id == "talk"),
        "{e:?}"
    );
    let e = errors_with_row("menu", &[Cue::LandFish], json!({"require": ["MenuOpen"]}));
    assert!(
        matches!(&e[..], [CatalogError::NeverAvailable { .. }]),
        "{e:?}"
    );
}

#[test]
fn lines_that_can_never_be_eligible() {
    // Match on a key the cue never carries.
    let e = errors_with_row(
        "m",
        &[Cue::BoatSpeedBurst],
        json!({"match": {"Rarity": "Common"}}),
    );
    assert_eq!(
        e,
        vec![CatalogError::NeverEligible {
            id: "m".into(),
            reasons: vec![(
                Cue::BoatSpeedBurst,
                Impossible::MatchNotCarried {
                    key: PayloadKey::Rarity
                }
            )]
        }]
    );
    // Forbid the state the derived cue is raised in.
    let e = errors_with_row("f", &[Cue::Cast], json!({"forbid": ["Fishing.Casted"]}));
    assert!(
        matches!(&e[..], [CatalogError::NeverEligible { reasons, .. }]
        if reasons == &vec![(Cue::Cast, Impossible::ForbidsCueState { state: FishingState::Casted.into() })])
    );
    // Require a state on standing still (Idle means no state at all).
    let e = errors_with_row("i", &[Cue::IdleDwell], json!({"require": ["Boat.Driving"]}));
    assert!(
        matches!(&e[..], [CatalogError::NeverEligible { reasons, .. }]
        if reasons == &vec![(Cue::IdleDwell, Impossible::RequireHidesCueState {
            required: BoatState::Driving.into(), cue_state: Effective::Idle })])
    );
    // Require another state of the cue's own owner.
    let e = errors_with_row(
        "o",
        &[Cue::WaitingForBite],
        json!({"require": ["Fishing.Minigame"]}),
    );
    assert!(
        matches!(&e[..], [CatalogError::NeverEligible { .. }]),
        "{e:?}"
    );
    // Requiring a lighter state is fine: fishing from the boat.
    assert!(
        warnings(with(
            every_cue(),
            row(
                "ok",
                &[Cue::WaitingForBite],
                json!({"require": ["Boat.Driving"]})
            )
        ))
        .is_empty()
    );
    // Impossible for one cue of two: a warning, and it stays out of that pool.
    let loaded = load(with(
        every_cue(),
        row(
            "half",
            &[Cue::LandFish, Cue::BoatSpeedBurst],
            json!({"match": {"Rarity": "Rare"}}),
        ),
    ))
    .unwrap();
    assert_eq!(
        loaded.warnings,
        vec![CatalogWarning::NeverEligibleFor {
            id: "half".into(),
            cue: Cue::BoatSpeedBurst,
            why: Impossible::MatchNotCarried {
                key: PayloadKey::Rarity
            }
        }]
    );
    let half = loaded.catalog.find("half").unwrap();
    assert!(loaded.catalog.pool(Cue::LandFish).contains(&half));
    assert!(!loaded.catalog.pool(Cue::BoatSpeedBurst).contains(&half));
}

#[test]
fn shape_errors() {
    let e = errors_with_row("base.Cast", &[Cue::Cast], json!({}));
    assert_eq!(
        e,
        vec![CatalogError::DuplicateId {
            id: "base.Cast".into()
        }]
    );
    let e = errors_with_row("p", &[Cue::Cast], json!({"priority": 3}));
    assert_eq!(
        e,
        vec![CatalogError::BadPriority {
            id: "p".into(),
            priority: 3
        }]
    );
    let e = errors_with_row("n", &[], json!({}));
    assert_eq!(e, vec![CatalogError::NoCues { id: "n".into() }]);
    let e = errors_with_row("t", &[Cue::Cast], json!({"text": "  "}));
    assert_eq!(e, vec![CatalogError::EmptyText { id: "t".into() }]);
    let e = errors_with_row(" ", &[Cue::Cast], json!({}));
    assert!(
        matches!(&e[..], [CatalogError::EmptyId { row: 14 }]),
        "{e:?}"
    );
    // A misspelled field is a JSON error, not a silently ignored condition.
    let typo = with(
        every_cue(),
        row("x", &[Cue::Cast], json!({"requires": ["UsingBait"]})),
    );
    assert!(matches!(load(typo), Err(LoadError::Json(_))));
    assert!(matches!(
        BarkCatalog::from_json("not json"),
        Err(LoadError::Json(_))
    ));
    // Rare moments outside 600..900 s: a warning.
    let w = warnings(with(
        every_cue(),
        row("r", &[Cue::LegendaryFish], json!({"priority": 2})),
    ));
    assert_eq!(
        w,
        vec![CatalogWarning::RareCooldown {
            id: "r".into(),
            cooldown_s: 300
        }]
    );
}

#[test]
fn defaults_and_sorting() {
    let loaded = load(with(every_cue(), row("aaa", &[Cue::Cast], json!({})))).unwrap();
    let c = loaded.catalog;
    let ids: Vec<&str> = c.lines().iter().map(|l| l.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(
        ids, sorted,
        "lines are sorted by id: the deck's initial order"
    );
    let l = c.line(c.find("aaa").unwrap());
    assert_eq!(l.cooldown.as_secs(), 300);
    assert_eq!(l.priority, Priority::Ambient);
}

fn real_catalog_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../content/barks/catalog.json")
}

#[test]
fn the_real_catalog_loads_clean_with_the_articles_pool_sizes() {
    let text = std::fs::read_to_string(real_catalog_path()).unwrap();
    let loaded = BarkCatalog::from_json(&text).unwrap();
    assert_eq!(loaded.warnings, vec![], "no warnings");
    let c = loaded.catalog;
    assert_eq!(c.lines().len(), 73, "73 lines, like the article's");
    for cue in Cue::ALL {
        assert!(!c.pool(cue).is_empty(), "{cue} has no line");
    }
    let post = Fact::Tag(Tag::PostReveal);
    let before_reveal = |cue: Cue| {
        c.pool(cue)
            .iter()
            .filter(|l| !c.line(**l).require.contains(&post))
            .count()
    };
    let after_reveal = |cue: Cue| {
        c.pool(cue)
            .iter()
            .filter(|l| c.line(**l).require.contains(&post))
            .count()
    };
    assert_eq!(before_reveal(Cue::WaitingForBite), 6);
    assert!(
        after_reveal(Cue::WaitingForBite) > 0,
        "late lines join the same pool"
    );
    assert_eq!(c.pool(Cue::LoseFish).len(), 9);
    assert_eq!(c.pool(Cue::IdleDwell).len(), 13);
    // The article's kinds of rows exist.
    let has = |pred: &dyn Fn(&banter_barks::Line) -> bool| c.lines().iter().any(pred);
    assert!(has(
        &|l| l.cues.contains(&Cue::LoseFish) && l.require.contains(&Fact::Tag(Tag::UsingBait))
    ));
    assert!(has(
        &|l| l.cues.contains(&Cue::SailingDwell) && l.forbid.contains(&Fact::Tag(Tag::Sprinting))
    ));
    assert!(has(&|l| l.cues.contains(&Cue::LandFish)
        && l.matches
            .contains(&(PayloadKey::Rarity, "Common".to_string()))));
    // Rare moments: priority 2 with 600..900 s.
    for cue in [Cue::LegendaryFish, Cue::MutatedFish] {
        for l in c.pool(cue) {
            let l = c.line(*l);
            assert_eq!(l.priority, Priority::Rare);
            assert!((600..=900).contains(&l.cooldown.as_secs()));
        }
    }
    // Original writing: none of the article's quoted lines.
    for quoted in [
        "Bite already",
        "Local fisherman",
        "point me at the horizon",
        "Rude little guy",
    ] {
        assert!(
            c.lines().iter().all(|l| !l.text.contains(quoted)),
            "{quoted}"
        );
    }
    assert_eq!(c.unplaced().len(), 1);
}

#[test]
fn a_localized_catalog_changes_only_subtitles() {
    let text = std::fs::read_to_string(real_catalog_path()).unwrap();
    let source = BarkCatalog::from_json(&text).unwrap().catalog;
    let first = source.lines()[0].id.clone();
    let localized = source
        .clone()
        .localized(|id| (id == first).then(|| "字幕".to_owned()));
    assert_eq!(localized.lines()[0].text, "字幕");
    for (a, b) in source.lines().iter().zip(localized.lines()).skip(1) {
        assert_eq!(a, b, "untranslated lines keep their text");
    }
    for cue in Cue::ALL {
        assert_eq!(source.pool(cue), localized.pool(cue), "{cue}: same pool");
    }
    let (a, b) = (&source.lines()[0], &localized.lines()[0]);
    assert_eq!(
        (
            &a.id, &a.cues, &a.require, &a.forbid, a.cooldown, a.priority
        ),
        (
            &b.id, &b.cues, &b.require, &b.forbid, b.cooldown, b.priority
        )
    );
}
