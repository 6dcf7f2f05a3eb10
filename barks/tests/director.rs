//! Director behaviour on a fake clock: dwell timers, derived cues, going
//! quiet, holds, cooldowns, the speaking lock, snapshot and restore.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use banter_barks::director::{HEARTBEAT, SPEAKING_LOCK};
use banter_barks::stats::idle_ceiling_per_minute;
use banter_barks::{
    Attempt, BarkDirector, Command, Cue, DirectorSnapshot, Filter, FireOutcome, Ineligible,
    Payload, QuietCause, QuietSource, Reason, SplitMix64, StopReason,
};
use banter_player::{BoatState, DialogueState, FishingState, FootState, StoryState};
use common::*;
use serde_json::json;

fn full_catalog() -> banter_barks::BarkCatalog {
    let mut rows = Vec::new();
    for cue in Cue::ALL {
        for i in 0..13 {
            let prio = match cue {
                Cue::LegendaryFish | Cue::MutatedFish => 2,
                Cue::IdleDwell | Cue::WalkingDwell | Cue::SailingDwell | Cue::StartWalking => 0,
                _ => 1,
            };
            let cooldown = if prio == 2 { 900 } else { 300 };
            rows.push(row(
                &format!("{}.{i:02}", cue.name()),
                &[cue],
                json!({"priority": prio, "cooldown_s": cooldown}),
            ));
        }
    }
    catalog_of(rows)
}

/// Heartbeats every second from `from` (exclusive) to `to` (inclusive),
/// finishing lines after 3 s; returns the attempts.
fn beats(
    d: &mut BarkDirector,
    w: &World,
    from: u64,
    to: u64,
    rng: &mut SplitMix64,
) -> Vec<Attempt> {
    let mut out = Vec::new();
    let mut playing: Option<(banter_barks::LineId, u64)> = None;
    for t in from + 1..=to {
        if let Some((l, end)) = playing
            && t >= end
        {
            d.line_finished(l);
            playing = None;
        }
        if let Some(a) = d.heartbeat(secs(t), &w.m, rng) {
            if let FireOutcome::Played { line, .. } = a.outcome {
                playing = Some((line, t + 3));
            }
            out.push(a);
        }
    }
    out
}

/// Asserts the director's only queued command is a stop of `line` for `reason`.
#[track_caller]
fn assert_only_stop(d: &mut BarkDirector, line: banter_barks::LineId, reason: StopReason) {
    assert_eq!(drain(d), vec![Command::Stop { line, reason }]);
}

/// Fires `QuestHandedIn` at `t` until a line plays (the roll may fail first); returns it.
fn hand_in_until_played(
    d: &mut BarkDirector,
    w: &World,
    t: u64,
    rng: &mut SplitMix64,
) -> banter_barks::LineId {
    loop {
        if let Some(l) = fire_cue(d, w, secs(t), Cue::QuestHandedIn, rng).played() {
            return l;
        }
    }
}

#[test]
fn heartbeat_is_one_second() {
    assert_eq!(HEARTBEAT, secs(1));
    assert_eq!(SPEAKING_LOCK, secs(30));
}

#[test]
fn dwell_windows_fire_once_per_window_and_rearm_whether_or_not_anything_was_said() {
    let cases = [
        (Cue::IdleDwell, 25u64),
        (Cue::WalkingDwell, 45),
        (Cue::SailingDwell, 30),
        (Cue::WaitingForBite, 12),
    ];
    for (cue, window) in cases {
        let mut w = World::new();
        match cue {
            Cue::WalkingDwell => drop(w.h.foot.enter(&mut w.m, FootState::Walking)),
            Cue::SailingDwell => drop(w.h.boat.enter(&mut w.m, BoatState::Driving)),
            Cue::WaitingForBite => drop(w.h.fishing.enter(&mut w.m, FishingState::Casted)),
            _ => {}
        }
        let mut d = started(full_catalog(), secs(1000), &w);
        let mut rng = SplitMix64::new(window);
        let attempts = beats(&mut d, &w, 1000, 1000 + window * 20, &mut rng);
        assert_eq!(attempts.len(), 20, "{cue}");
        for (k, a) in attempts.iter().enumerate() {
            assert_eq!(a.cue, cue);
            assert_eq!(a.at, secs(1000 + window * (k as u64 + 1)), "{cue}");
        }
        // Some were said and some not; the windows did not care.
        assert!(attempts.iter().any(|a| a.outcome.played().is_some()));
        assert!(attempts.iter().any(|a| a.outcome.played().is_none()));
    }
}

#[test]
fn any_effective_change_resets_the_dwell_timer() {
    let (mut w, mut d, mut rng) = started_director(full_catalog(), 1);
    w.h.foot.enter(&mut w.m, FootState::Walking);
    d.player_changed(secs(0), &w.m, &mut rng);
    assert!(beats(&mut d, &w, 0, 40, &mut rng).is_empty());
    // A derived transition (boat on, boat off) at 40 restarts the count.
    w.h.boat.enter(&mut w.m, BoatState::Driving);
    d.player_changed(secs(40), &w.m, &mut rng);
    w.h.boat.clear(&mut w.m);
    let back = d.player_changed(secs(41), &w.m, &mut rng).unwrap();
    assert_eq!(back.cue, Cue::StartWalking, "walking again is an enter too");
    assert_eq!(d.dwell_since(), secs(41));
    let a = beats(&mut d, &w, 41, 100, &mut rng);
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].cue, a[0].at), (Cue::WalkingDwell, secs(86)));
    // A missed notification is caught by the next heartbeat.
    w.h.boat.enter(&mut w.m, BoatState::Driving);
    let a = d.heartbeat(secs(101), &w.m, &mut rng).unwrap();
    assert_eq!(a.cue, Cue::TakeHelm);
    assert_eq!(d.dwell_since(), secs(101));
}

#[test]
fn derived_cues_from_state_changes_including_the_transition_nobody_writes() {
    let (mut w, mut d, mut rng) = started_director(full_catalog(), 2);
    let mut raised = |w: &World, t: u64, d: &mut BarkDirector| {
        d.player_changed(secs(t), &w.m, &mut rng).map(|a| a.cue)
    };
    w.h.foot.enter(&mut w.m, FootState::Walking);
    assert_eq!(raised(&w, 10, &mut d), Some(Cue::StartWalking));
    w.h.boat.enter(&mut w.m, BoatState::Driving);
    assert_eq!(raised(&w, 20, &mut d), Some(Cue::TakeHelm));
    w.h.fishing.enter(&mut w.m, FishingState::Charging);
    assert_eq!(raised(&w, 30, &mut d), None);
    w.h.fishing.enter(&mut w.m, FishingState::Casted);
    assert_eq!(raised(&w, 31, &mut d), Some(Cue::Cast));
    w.h.fishing.enter(&mut w.m, FishingState::Minigame);
    assert_eq!(raised(&w, 40, &mut d), None);
    w.h.fishing.enter(&mut w.m, FishingState::Cooldown);
    assert_eq!(raised(&w, 45, &mut d), Some(Cue::FinishCatch));
    // Stop fishing while sailing: nobody entered Boat.Driving.
    w.h.fishing.clear(&mut w.m);
    assert_eq!(raised(&w, 47, &mut d), Some(Cue::TakeHelm));
    // Hearing the same change twice costs nothing.
    assert_eq!(raised(&w, 47, &mut d), None);
    // Leaving the boat while still on foot: walking again.
    w.h.boat.clear(&mut w.m);
    assert_eq!(raised(&w, 60, &mut d), Some(Cue::StartWalking));
    w.h.foot.clear(&mut w.m);
    assert_eq!(
        raised(&w, 70, &mut d),
        None,
        "idle has a dwell, not an enter cue"
    );
}

#[test]
fn idle_ceiling_is_0_84_lines_per_idle_minute() {
    assert!((idle_ceiling_per_minute() - 0.84).abs() < 1e-12);
    let (w, mut d, mut rng) = started_director(full_catalog(), 3);
    let hours = 50u64;
    let attempts = beats(&mut d, &w, 0, hours * 3600, &mut rng);
    let minutes = (hours * 60) as f64;
    // Structural ceiling: never more than one attempt per 25 s window.
    assert_eq!(attempts.len() as u64, hours * 3600 / 25);
    assert!(attempts.len() as f64 / minutes <= 60.0 / 25.0);
    for a in &attempts {
        // Nothing but the roll limits it: 13 lines, 300 s cooldown.
        if let Some(r) = a.outcome.reason() {
            assert_eq!(r.filter(), Filter::Roll, "{r:?}");
        }
    }
    let lines = attempts
        .iter()
        .filter(|a| a.outcome.played().is_some())
        .count() as f64;
    let rate = lines / minutes;
    // The expected rate is the ceiling; the measured one is within 5 sigma.
    let n = attempts.len() as f64;
    let sigma_rate = (n * 0.35 * 0.65).sqrt() / minutes;
    assert!(rate <= 0.84 + 5.0 * sigma_rate, "{rate}");
    assert!(rate >= 0.84 - 5.0 * sigma_rate, "{rate}");
}

#[test]
fn going_quiet_cuts_text_and_audio_level_triggered() {
    let (mut w, mut d, mut rng) = started_director(full_catalog(), 4);
    let play = |d: &mut BarkDirector, w: &World, t: u64, rng: &mut SplitMix64| {
        let l = hand_in_until_played(d, w, t, rng);
        drain(d);
        l
    };
    // A cutscene opens while a line plays.
    let l = play(&mut d, &w, 10, &mut rng);
    w.h.story.enter(&mut w.m, StoryState::Cutscene);
    assert_eq!(d.player_changed(secs(11), &w.m, &mut rng), None);
    assert_only_stop(&mut d, l, StopReason::Quiet(QuietCause::Unavailable));
    assert!(d.speaking(secs(11)).is_none());
    w.h.story.clear(&mut w.m);
    d.player_changed(secs(12), &w.m, &mut rng);
    // A menu (a tag change): the same cut.
    let l = play(&mut d, &w, 30, &mut rng);
    w.h.tags.menu_open.set(&mut w.m, true);
    d.player_changed(secs(31), &w.m, &mut rng);
    assert_only_stop(&mut d, l, StopReason::Quiet(QuietCause::Unavailable));
    w.h.tags.menu_open.set(&mut w.m, false);
    // Missed event: the heartbeat recomputes and cuts anyway.
    let l = play(&mut d, &w, 50, &mut rng);
    w.h.dialogue.enter(&mut w.m, DialogueState::Talking);
    d.heartbeat(secs(51), &w.m, &mut rng);
    assert_only_stop(&mut d, l, StopReason::Quiet(QuietCause::Unavailable));
    // Nothing playing: nothing to cut, and no command.
    d.player_changed(secs(52), &w.m, &mut rng);
    assert!(drain(&mut d).is_empty());
}

#[test]
fn player_switch_and_named_holds_do_not_mix() {
    let (w, mut d, mut rng) = started_director(full_catalog(), 5);
    let fire = |d: &mut BarkDirector, t: u64, rng: &mut SplitMix64| {
        fire_cue(d, &w, secs(t), Cue::QuestHandedIn, rng)
    };
    // Releasing a hold never taken does nothing.
    assert!(!d.release(QuietSource::CombatTutorial));
    assert!(d.holds().is_empty());
    assert!(d.may_speak());
    assert!(drain(&mut d).is_empty());

    // A hold cuts the line that is playing.
    let l = fire(&mut d, 10, &mut rng).played().unwrap();
    drain(&mut d);
    assert!(d.hold(QuietSource::CombatTutorial));
    assert!(!d.hold(QuietSource::CombatTutorial), "taken once");
    assert_only_stop(
        &mut d,
        l,
        StopReason::Quiet(QuietCause::Held(QuietSource::CombatTutorial)),
    );
    d.hold(QuietSource::Credits);
    assert!(matches!(
        fire(&mut d, 30, &mut rng),
        FireOutcome::Rejected(Reason::HeldQuiet { .. })
    ));
    d.release(QuietSource::CombatTutorial);
    assert!(!d.may_speak(), "another hold is still taken");
    d.release(QuietSource::Credits);
    // Releasing the last hold restores the player's choice: on.
    assert!(d.may_speak());
    assert!(fire(&mut d, 50, &mut rng).played().is_some());
    drain(&mut d);

    // The player turns barks off during a hold; releasing it keeps them off.
    d.hold(QuietSource::Tutorial);
    d.set_player_switch(false);
    d.release(QuietSource::Tutorial);
    assert!(d.holds().is_empty());
    assert_eq!(
        fire(&mut d, 70, &mut rng),
        FireOutcome::Rejected(Reason::SwitchedOff)
    );
    d.set_player_switch(true);
    assert!(fire(&mut d, 90, &mut rng).played().is_some());
    // Turning the switch off cuts too.
    let cmds = drain(&mut d);
    let Some(Command::Play { line }) = cmds.last().copied() else {
        panic!("{cmds:?}")
    };
    d.set_player_switch(false);
    assert_only_stop(&mut d, line, StopReason::Quiet(QuietCause::SwitchedOff));
}

#[test]
fn cooldowns_keep_a_line_from_repeating() {
    let w = World::new();
    let cat = catalog_of(vec![
        row("q.a", &[Cue::QuestHandedIn], json!({"priority": 1})),
        row(
            "q.b",
            &[Cue::QuestHandedIn],
            json!({"priority": 1, "cooldown_s": 600}),
        ),
    ]);
    let mut d = started(cat, secs(0), &w);
    let mut rng = SplitMix64::new(6);
    let mut fire = |d: &mut BarkDirector, t: u64| {
        let o = fire_cue(d, &w, secs(t), Cue::QuestHandedIn, &mut rng);
        if let Some(l) = o.played() {
            d.line_finished(l);
        }
        o
    };
    let first = fire(&mut d, 0).played().unwrap();
    let second = fire(&mut d, 10).played().unwrap();
    assert_ne!(first, second);
    let r = fire(&mut d, 20);
    let FireOutcome::Rejected(Reason::NoEligibleLine { lines }) = r else {
        panic!("{r:?}")
    };
    assert!(
        lines
            .iter()
            .all(|(_, why)| matches!(why, Ineligible::Cooldown { .. }))
    );
    // t - t_l >= κ: q.a is eligible again exactly 300 s after it played.
    let a = id(&d, "q.a");
    let at = d.last_played(a).unwrap().as_secs();
    let before = fire(&mut d, at + 299);
    assert_eq!(before.reason().map(|r| r.filter()), Some(Filter::Draw));
    assert_eq!(fire(&mut d, at + 300).played(), Some(a));
    // q.b waits 600 s; meanwhile q.a is the last heard, so nothing plays
    // even once its own cooldown is over: never twice in a row.
    let b = id(&d, "q.b");
    let bt = d.last_played(b).unwrap().as_secs();
    assert!(bt > at, "with this seed q.b played second");
    let r = fire(&mut d, at + 300 + 300);
    let FireOutcome::Rejected(Reason::NoEligibleLine { lines }) = r else {
        panic!("{r:?}")
    };
    assert!(lines.contains(&(a, Ineligible::JustHeard)), "{lines:?}");
    assert_eq!(fire(&mut d, bt + 600).played(), Some(b));
}

#[test]
fn speaking_lock_expires_after_30_s() {
    let (w, mut d, mut rng) = started_director(full_catalog(), 7);
    let l = hand_in_until_played(&mut d, &w, 100, &mut rng);
    drain(&mut d);
    d.heartbeat(secs(129), &w.m, &mut rng);
    assert!(drain(&mut d).is_empty());
    assert!(d.speaking(secs(129)).is_some());
    d.heartbeat(secs(130), &w.m, &mut rng);
    assert_only_stop(&mut d, l, StopReason::LockExpired);
    assert!(!d.line_finished(l), "already released");
}

#[test]
fn line_finished_releases_only_its_own_lock() {
    let (w, mut d, mut rng) = started_director(full_catalog(), 8);
    let l = hand_in_until_played(&mut d, &w, 100, &mut rng);
    let other = d.catalog().pool(Cue::IdleDwell)[0];
    assert!(!d.line_finished(other));
    assert!(d.speaking(secs(101)).is_some());
    assert!(d.line_finished(l));
    assert!(d.speaking(secs(101)).is_none());
}

/// Drive a director through a scripted stretch of play; returns every
/// attempt and command, for comparing two directors.
fn script(d: &mut BarkDirector, w: &mut World, from: u64, rng: &mut SplitMix64) -> String {
    let mut log = String::new();
    for t in from..from + 400 {
        let phase = (t / 37) % 5;
        match phase {
            0 => drop(w.h.foot.enter(&mut w.m, FootState::Walking)),
            1 => drop(w.h.boat.enter(&mut w.m, BoatState::Driving)),
            2 => drop(w.h.fishing.enter(&mut w.m, FishingState::Casted)),
            3 => drop(w.h.fishing.clear(&mut w.m)),
            _ => {
                w.h.boat.clear(&mut w.m);
                w.h.foot.clear(&mut w.m);
            }
        }
        if let Some(a) = d.player_changed(secs(t), &w.m, rng) {
            log += &format!("{a:?}\n");
        }
        if let Some(a) = d.heartbeat(secs(t) + Duration::from_millis(500), &w.m, rng) {
            log += &format!("{a:?}\n");
        }
        if t % 19 == 0 {
            let o = fire_cue(d, w, secs(t), Cue::LoseFish, rng);
            log += &format!("{o:?}\n");
        }
        while let Some(c) = d.poll_command() {
            log += &format!("{c:?}\n");
        }
    }
    log
}

#[test]
fn snapshot_and_restore_continue_identically() {
    let (mut w, mut d, mut rng) = started_director(full_catalog(), 9);
    script(&mut d, &mut w, 0, &mut rng);
    let snap = d.snapshot();
    let text = serde_json::to_string(&snap).unwrap();
    let back: DirectorSnapshot = serde_json::from_str(&text).unwrap();
    assert_eq!(back, snap);
    let mut restored = BarkDirector::restore(full_catalog(), &back).unwrap();
    assert_eq!(restored.snapshot(), snap);

    let mut w2 = World::new();
    w2.m = w.m;
    let mut rng2 = rng.clone();
    let a = script(&mut d, &mut w, 400, &mut rng);
    let b = script(&mut restored, &mut w2, 400, &mut rng2);
    assert!(a.contains("Played"));
    assert_eq!(a, b);
}

#[test]
fn restore_against_an_edited_catalog_and_a_bad_version() {
    let (mut w, mut d, mut rng) = started_director(full_catalog(), 10);
    script(&mut d, &mut w, 0, &mut rng);
    let snap = d.snapshot();
    // Drop one idle line from the catalog.
    let rows: Vec<_> = full_catalog()
        .lines()
        .iter()
        .filter(|l| l.id != "IdleDwell.00")
        .map(|l| {
            row(
                &l.id,
                &l.cues,
                json!({"priority": l.priority.level(), "cooldown_s": l.cooldown.as_secs()}),
            )
        })
        .collect();
    let edited = catalog_of(rows);
    let r = BarkDirector::restore(edited, &snap).unwrap();
    assert_eq!(r.deck(Cue::IdleDwell).len(), 12);
    assert_eq!(r.deck(Cue::LoseFish).state().order.len(), 13);
    let mut bad = snap.clone();
    bad.version = 99;
    assert!(BarkDirector::restore(full_catalog(), &bad).is_err());
}

#[test]
fn explain_says_why_without_spending() {
    let mut w = World::new();
    let cat = catalog_of(vec![
        row(
            "s.calm",
            &[Cue::SailingDwell],
            json!({"forbid": ["Sprinting"]}),
        ),
        row(
            "s.late",
            &[Cue::SailingDwell],
            json!({"require": ["PostReveal"]}),
        ),
    ]);
    let d = started(cat, secs(0), &w);
    w.h.tags.sprinting.set(&mut w.m, true);
    let why = d.explain(secs(5), Cue::SailingDwell, &Payload::EMPTY, &w.m);
    assert_eq!(why.len(), 2);
    assert!(why.iter().all(|(_, e)| e.is_some()));
    assert!(
        why.iter()
            .any(|(_, e)| e.as_ref().map(ToString::to_string) == Some("forbids Sprinting".into()))
    );
}

#[test]
fn outcomes_serialize_as_data() {
    let o = FireOutcome::Rejected(Reason::Unavailable);
    assert_eq!(
        serde_json::to_string(&o).unwrap(),
        r#"{"Rejected":"Unavailable"}"#
    );
    let _ = Duration::ZERO;
}
