//! Snapshot and restore: round trip, recomputed effective state, corrupted input rejected.

// Tests may unwrap: every value here is built by the test itself.
#![allow(clippy::unwrap_used)]

mod common;

use banter_player::{
    BoatState, Effective, FishingState, Owner, PlayerStateMachine, RestoreError, Snapshot, State,
    StoryState, SubZone, Tag,
};
use common::{all_configurations, machine_with};

#[test]
fn round_trip_through_json_for_every_configuration() {
    for config in all_configurations() {
        let (mut m, h) = machine_with(&config);
        h.tags.using_bait.set(&mut m, true);
        h.sub_zones.set(&mut m, SubZone::Lighthouse, true);

        let json = serde_json::to_string(&m.snapshot()).unwrap();
        let snapshot: Snapshot = serde_json::from_str(&json).unwrap();
        let restored = PlayerStateMachine::restore(&snapshot).unwrap();
        assert_eq!(restored, m);

        // The machine itself serializes as its snapshot.
        let direct: PlayerStateMachine =
            serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(direct, m);
    }
}

#[test]
fn snapshot_is_readable_names() {
    let (mut m, h) = PlayerStateMachine::new();
    h.boat.enter(&mut m, BoatState::Driving);
    h.fishing.enter(&mut m, FishingState::Casted);
    h.tags.night.set(&mut m, true);
    h.sub_zones.set(&mut m, SubZone::Dock, true);
    assert_eq!(
        serde_json::to_string(&m).unwrap(),
        r#"{"version":1,"held":["Boat.Driving","Fishing.Casted"],"tags":["Night","SubZone.Dock"],"revision":4}"#
    );
}

#[test]
fn restore_recomputes_the_effective_state() {
    // Listed lightest-first and heaviest-first: the effective state comes from the weights.
    for json in [
        r#"{"version":1,"held":["Boat.Driving","Story.Cutscene"],"tags":[],"revision":9}"#,
        r#"{"version":1,"held":["Story.Cutscene","Boat.Driving"],"tags":[],"revision":9}"#,
    ] {
        let m: PlayerStateMachine = serde_json::from_str(json).unwrap();
        assert_eq!(
            m.effective(),
            Effective::State(State::Story(StoryState::Cutscene))
        );
        assert_eq!(m.revision(), 9);
    }
    // A stored effective state is not part of the format: it is refused, not trusted.
    let stale = r#"{"version":1,"held":[],"tags":[],"revision":1,"effective":"Story.Cutscene"}"#;
    assert!(serde_json::from_str::<PlayerStateMachine>(stale).is_err());
}

#[test]
fn the_same_handles_write_a_restored_machine() {
    let (mut m, h) = PlayerStateMachine::new();
    h.boat.enter(&mut m, BoatState::Driving);
    h.fishing.enter(&mut m, FishingState::Casted);
    let mut restored = PlayerStateMachine::restore(&m.snapshot()).unwrap();
    let change = h.fishing.clear(&mut restored).unwrap();
    assert_eq!(change.to, Effective::State(State::Boat(BoatState::Driving)));
    assert_eq!(restored.revision(), m.revision() + 1);
}

#[test]
fn corrupted_snapshots_are_errors_not_panics() {
    let corrupt = [
        // Not JSON / truncated.
        "",
        "{",
        r#"{"version":1,"held":["Boat.Driving""#,
        // Unknown names.
        r#"{"version":1,"held":["Fishing.Cast"],"tags":[],"revision":0}"#,
        r#"{"version":1,"held":[],"tags":["InBoat"],"revision":0}"#,
        r#"{"version":1,"held":[],"tags":["SubZone.Volcano"],"revision":0}"#,
        // A tag where a state belongs and vice versa.
        r#"{"version":1,"held":["UsingBait"],"tags":[],"revision":0}"#,
        r#"{"version":1,"held":[],"tags":["Boat.Driving"],"revision":0}"#,
        // Two states for one owner; a tag twice.
        r#"{"version":1,"held":["Fishing.Casted","Fishing.Minigame"],"tags":[],"revision":0}"#,
        r#"{"version":1,"held":["Boat.Driving","Boat.Driving"],"tags":[],"revision":0}"#,
        r#"{"version":1,"held":[],"tags":["Night","Night"],"revision":0}"#,
        // Wrong version, wrong types, missing or extra fields.
        r#"{"version":2,"held":[],"tags":[],"revision":0}"#,
        r#"{"version":1,"held":"Boat.Driving","tags":[],"revision":0}"#,
        r#"{"version":1,"held":[3],"tags":[],"revision":0}"#,
        r#"{"version":1,"held":[],"tags":[],"revision":-1}"#,
        r#"{"version":1,"held":[],"tags":[]}"#,
        r#"{"version":1,"held":[],"tags":[],"revision":0,"extra":true}"#,
        r#"[1,[],[],0,5]"#,
        "null",
    ];
    for json in corrupt {
        assert!(
            serde_json::from_str::<PlayerStateMachine>(json).is_err(),
            "accepted {json:?}"
        );
    }
}

#[test]
fn restore_errors_are_typed() {
    let snap = |held: Vec<State>, tags: Vec<Tag>, version| Snapshot {
        version,
        held,
        tags,
        revision: 0,
    };
    let casted = State::Fishing(FishingState::Casted);
    let minigame = State::Fishing(FishingState::Minigame);
    assert_eq!(
        PlayerStateMachine::restore(&snap(vec![casted, minigame], vec![], 1)),
        Err(RestoreError::OwnerHeldTwice {
            owner: Owner::Fishing,
            first: casted,
            second: minigame
        })
    );
    assert_eq!(
        PlayerStateMachine::restore(&snap(vec![], vec![Tag::Afk, Tag::Afk], 1)),
        Err(RestoreError::TagListedTwice(Tag::Afk))
    );
    assert_eq!(
        PlayerStateMachine::restore(&snap(vec![], vec![], 0)),
        Err(RestoreError::UnsupportedVersion(0))
    );
    let err = serde_json::from_str::<PlayerStateMachine>(
        r#"{"version":1,"held":["Fishing.Casted","Fishing.Minigame"],"tags":[],"revision":0}"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("two states"), "{err}");
}
