//! Fire(c, π) rejects in exactly the order of section 4.5. Each test sets
//! up the filter under test AND every later one, checks the earlier filter
//! wins, and checks that no card was spent (deck and stamps unchanged).
#![allow(clippy::unwrap_used)]

mod common;

use banter_barks::director::SPACING;
use banter_barks::{
    BarkDirector, Command, Cue, Filter, FireOutcome, Ineligible, Payload, PayloadKey, QuietSource,
    Reason, SplitMix64, StopReason,
};
use banter_player::{Fact, StoryState, Tag};
use common::*;
use serde_json::json;

fn catalog() -> banter_barks::BarkCatalog {
    catalog_of(vec![
        row("land.a", &[Cue::LandFish], json!({"priority": 1})),
        row("land.b", &[Cue::LandFish], json!({"priority": 1})),
        row("land.c", &[Cue::LandFish], json!({"priority": 1})),
        row(
            "land.bait",
            &[Cue::LandFish],
            json!({"priority": 1, "require": ["UsingBait"]}),
        ),
        row("idle.a", &[Cue::IdleDwell], json!({})),
        row("idle.b", &[Cue::IdleDwell], json!({})),
        row(
            "legend.a",
            &[Cue::LegendaryFish],
            json!({"priority": 2, "cooldown_s": 900}),
        ),
        row(
            "legend.b",
            &[Cue::LegendaryFish],
            json!({"priority": 2, "cooldown_s": 900}),
        ),
        row(
            "quest.a",
            &[Cue::QuestHandedIn],
            json!({"priority": 1, "match": {"Npc": "mira"}}),
        ),
    ])
}

/// Everything the director could spend: decks and stamps.
fn spendable(d: &BarkDirector) -> String {
    let decks: Vec<_> = Cue::ALL.iter().map(|c| d.deck(*c).state()).collect();
    let stamps: Vec<_> = d
        .catalog()
        .lines()
        .iter()
        .map(|l| d.last_played(d.catalog().find(&l.id).unwrap()))
        .collect();
    format!("{decks:?} {stamps:?} {:?}", d.last_bark())
}

/// Fire until a line plays (the roll may fail first); returns it.
fn play(
    d: &mut BarkDirector,
    w: &World,
    t: u64,
    cue: Cue,
    rng: &mut SplitMix64,
) -> banter_barks::LineId {
    loop {
        match fire_cue(d, w, secs(t), cue, rng) {
            FireOutcome::Played { line, .. } => return line,
            FireOutcome::Rejected(r) => assert_eq!(r.filter(), Filter::Roll, "{r:?}"),
        }
    }
}

#[test]
fn filter_1_not_started_beats_everything() {
    let mut w = World::new();
    w.h.story.enter(&mut w.m, StoryState::Cutscene); // 2 would reject too
    let mut d = BarkDirector::new(catalog());
    let before = spendable(&d);
    let mut rng = SplitMix64::new(1);
    let r = fire_cue(&mut d, &w, secs(5), Cue::LandFish, &mut rng);
    assert_eq!(r, FireOutcome::Rejected(Reason::NotStarted));
    assert_eq!(spendable(&d), before);
}

#[test]
fn filter_1_switch_and_holds_beat_availability() {
    let (mut w, mut d, mut rng) = started_director(catalog(), 1);
    w.h.story.enter(&mut w.m, StoryState::Cutscene);
    let before = spendable(&d);

    d.set_player_switch(false);
    let r = fire_cue(&mut d, &w, secs(5), Cue::LandFish, &mut rng);
    assert_eq!(r, FireOutcome::Rejected(Reason::SwitchedOff));

    d.set_player_switch(true);
    d.hold(QuietSource::CombatTutorial);
    let r = fire_cue(&mut d, &w, secs(6), Cue::LandFish, &mut rng);
    let FireOutcome::Rejected(Reason::HeldQuiet { holds }) = r else {
        panic!("{r:?}")
    };
    assert!(holds.contains(QuietSource::CombatTutorial));
    assert_eq!(spendable(&d), before);
}

#[test]
fn filter_2_a_cue_during_a_cutscene_never_spends_a_card() {
    let (mut w, mut d, mut rng) = started_director(catalog(), 2);
    w.h.story.enter(&mut w.m, StoryState::Cutscene);
    let before = spendable(&d);
    for t in 0..1000 {
        let r = fire_cue(&mut d, &w, secs(t * 10), Cue::LandFish, &mut rng);
        assert_eq!(r, FireOutcome::Rejected(Reason::Unavailable));
        // Even a cue whose pool has no eligible line: 2 comes before 3.
        let r = fire_cue(&mut d, &w, secs(t * 10), Cue::QuestHandedIn, &mut rng);
        assert_eq!(r, FireOutcome::Rejected(Reason::Unavailable));
    }
    assert_eq!(spendable(&d), before);
    // The menu and the microphone are availability too.
    w.h.story.clear(&mut w.m);
    w.h.tags.using_microphone.set(&mut w.m, true);
    let r = fire_cue(&mut d, &w, secs(20_000), Cue::LandFish, &mut rng);
    assert_eq!(r, FireOutcome::Rejected(Reason::Unavailable));
}

#[test]
fn filter_3_no_eligible_line_beats_spacing_and_says_why() {
    let (w, mut d, mut rng) = started_director(catalog(), 3);
    let legend = play(&mut d, &w, 100, Cue::LegendaryFish, &mut rng);
    d.line_finished(legend);
    let before = spendable(&d);
    // One second after a bark (spacing would reject) with a payload that
    // matches nothing (the draw rejects first).
    let p = Payload::new().with(PayloadKey::Npc, "someone else");
    let r = d.fire(secs(101), Cue::QuestHandedIn, &p, &w.m, &mut rng);
    let FireOutcome::Rejected(Reason::NoEligibleLine { lines }) = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        lines,
        vec![(
            id(&d, "quest.a"),
            Ineligible::PayloadMismatch {
                key: PayloadKey::Npc,
                wanted: "mira".into()
            }
        )]
    );
    assert_eq!(spendable(&d), before);
    // Every line of a pool on cooldown or missing a Require: listed.
    let w2 = World::new();
    let mut d2 = started(catalog(), secs(0), &w2);
    let mut seen = Vec::new();
    for t in 0..3 {
        let l = play(&mut d2, &w2, 10 + t * 10, Cue::LandFish, &mut rng);
        d2.line_finished(l);
        seen.push(l);
    }
    let r = fire_cue(&mut d2, &w2, secs(50), Cue::LandFish, &mut rng);
    let FireOutcome::Rejected(Reason::NoEligibleLine { lines }) = r else {
        panic!("{r:?}")
    };
    assert_eq!(lines.len(), 4);
    assert!(lines.contains(&(
        id(&d2, "land.bait"),
        Ineligible::Missing(Fact::Tag(Tag::UsingBait))
    )));
    assert!(
        lines
            .iter()
            .filter(|(_, why)| matches!(why, Ineligible::Cooldown { .. }))
            .count()
            == 3
    );
}

#[test]
fn filter_3_empty_pool() {
    let (w, mut d, mut rng) = started_director(catalog(), 3);
    let r = fire_cue(&mut d, &w, secs(1), Cue::MutatedFish, &mut rng);
    assert_eq!(r, FireOutcome::Rejected(Reason::EmptyPool));
}

#[test]
fn filter_4_spacing_beats_speaking_and_roll_and_spends_nothing() {
    let (w, mut d, mut rng) = started_director(catalog(), 4);
    let first = play(&mut d, &w, 100, Cue::LandFish, &mut rng);
    // Still speaking (5 would reject), 3 s later (4 rejects first).
    let before = spendable(&d);
    for _ in 0..200 {
        let r = fire_cue(&mut d, &w, secs(103), Cue::LandFish, &mut rng);
        let FireOutcome::Rejected(Reason::TooSoon { line, since_last }) = r else {
            panic!("{r:?}")
        };
        assert_ne!(line, first);
        assert_eq!(since_last, secs(3));
    }
    assert_eq!(spendable(&d), before);
    // The candidate is the same card every time: nothing was spent.
    let c1 = fire_cue(&mut d, &w, secs(103), Cue::LandFish, &mut rng);
    let c2 = fire_cue(&mut d, &w, secs(104), Cue::LandFish, &mut rng);
    assert_eq!(
        c1.reason().unwrap().candidate(),
        c2.reason().unwrap().candidate()
    );
    // Exactly 8 s later the spacing no longer applies.
    d.line_finished(first);
    let r = fire_cue(&mut d, &w, secs(100) + SPACING, Cue::LandFish, &mut rng);
    assert_ne!(r.reason().map(|r| r.filter()), Some(Filter::Spacing));
}

#[test]
fn filter_4_priority_2_ignores_spacing() {
    let (w, mut d, mut rng) = started_director(catalog(), 5);
    let land = play(&mut d, &w, 100, Cue::LandFish, &mut rng);
    d.line_finished(land);
    let r = fire_cue(&mut d, &w, secs(101), Cue::LegendaryFish, &mut rng);
    assert!(
        matches!(r.reason().map(|r| r.filter()), None | Some(Filter::Roll)),
        "{r:?}"
    );
}

#[test]
fn filter_5_speaking_equal_priority_beats_roll_and_higher_cuts() {
    let (w, mut d, mut rng) = started_director(catalog(), 6);
    let idle = play(&mut d, &w, 100, Cue::IdleDwell, &mut rng);
    drain(&mut d);
    // 9 s later (past spacing), the idle line (priority 0) still speaks.
    let before = spendable(&d);
    for _ in 0..100 {
        let r = fire_cue(&mut d, &w, secs(109), Cue::IdleDwell, &mut rng);
        let FireOutcome::Rejected(Reason::Speaking { speaking, .. }) = r else {
            panic!("{r:?}")
        };
        assert_eq!(speaking, idle);
    }
    assert_eq!(spendable(&d), before);
    // A priority 1 line cuts it off: Stop (text and audio) then Play.
    let land = play(&mut d, &w, 109, Cue::LandFish, &mut rng);
    assert_eq!(
        drain(&mut d),
        vec![
            Command::Stop {
                line: idle,
                reason: StopReason::CutOff { by: land }
            },
            Command::Play { line: land }
        ]
    );
    assert_eq!(d.speaking(secs(109)).map(|s| s.line), Some(land));
    // And a priority 2 line cuts that, within the spacing.
    let legend = play(&mut d, &w, 110, Cue::LegendaryFish, &mut rng);
    assert_eq!(
        drain(&mut d),
        vec![
            Command::Stop {
                line: land,
                reason: StopReason::CutOff { by: legend }
            },
            Command::Play { line: legend }
        ]
    );
    // Equal priority 2 while it speaks: rejected by 5.
    let r = fire_cue(&mut d, &w, secs(111), Cue::LegendaryFish, &mut rng);
    assert_eq!(r.reason().map(|r| r.filter()), Some(Filter::Speaking));
}

#[test]
fn filter_5_a_failed_roll_cuts_nothing() {
    let (w, mut d, mut rng) = started_director(catalog(), 7);
    let idle = play(&mut d, &w, 100, Cue::IdleDwell, &mut rng);
    drain(&mut d);
    loop {
        let r = fire_cue(&mut d, &w, secs(109), Cue::LandFish, &mut rng);
        if r.reason().is_some() {
            assert_eq!(r.reason().map(|r| r.filter()), Some(Filter::Roll));
            assert!(drain(&mut d).is_empty(), "the old line keeps playing");
            assert_eq!(d.speaking(secs(109)).map(|s| s.line), Some(idle));
            break;
        }
        // Played: start over until we observe a failed roll.
        d = started(catalog(), secs(0), &w);
        play(&mut d, &w, 100, Cue::IdleDwell, &mut rng);
        drain(&mut d);
    }
}

#[test]
fn filter_6_roll_comes_last_and_a_lost_roll_spends_nothing() {
    let (w, mut d, mut rng) = started_director(catalog(), 8);
    let mut losses = 0;
    let mut t = 0;
    while losses < 50 {
        t += 10;
        let before = spendable(&d);
        match fire_cue(&mut d, &w, secs(t), Cue::LandFish, &mut rng) {
            FireOutcome::Rejected(Reason::Roll {
                line,
                probability,
                roll,
            }) => {
                assert_eq!(probability, 0.30);
                assert!(roll >= 0.30);
                assert!(d.catalog().pool(Cue::LandFish).contains(&line));
                assert_eq!(spendable(&d), before, "a lost roll spends no card");
                losses += 1;
            }
            FireOutcome::Played { line, .. } => {
                d.line_finished(line);
            }
            FireOutcome::Rejected(r) => {
                // Once the three plain lines are on cooldown the draw stops it.
                assert_eq!(r.filter(), Filter::Draw);
                t += 300;
            }
        }
    }
}

#[test]
fn filters_are_numbered_like_the_article() {
    let n: Vec<u8> = Filter::ALL.iter().map(|f| f.number()).collect();
    assert_eq!(n, [1, 2, 3, 4, 5, 6]);
    assert!(Filter::Quiet < Filter::Roll);
}
