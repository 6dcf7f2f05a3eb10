//! The machine: regions, effective state, the transition nobody writes, no-op writes,
//! revision, tags and `has`.

// Tests may unwrap: every value here is built by the test itself.
#![allow(clippy::unwrap_used)]

mod common;

use banter_player::{
    BoatState, DialogueState, Effective, Fact, FishingState, FootState, Owner, PlayerStateMachine,
    State, StateChanged, StealState, StoryState, SubZone, Tag, TagChange,
};
use common::{all_configurations, clear, enter, machine_with};

const WALKING: State = State::Foot(FootState::Walking);
const DRIVING: State = State::Boat(BoatState::Driving);
const CHARGING: State = State::Fishing(FishingState::Charging);
const CASTED: State = State::Fishing(FishingState::Casted);
const MINIGAME: State = State::Fishing(FishingState::Minigame);
const STEALING: State = State::Steal(StealState::Stealing);
const TALKING: State = State::Dialogue(DialogueState::Talking);
const CUTSCENE: State = State::Story(StoryState::Cutscene);

fn changed(from: impl Into<Effective>, to: impl Into<Effective>) -> Option<StateChanged> {
    Some(StateChanged {
        from: from.into(),
        to: to.into(),
    })
}

#[test]
fn owner_weights_are_the_articles_tiers() {
    let weights: Vec<(Owner, u8)> = Owner::ALL.into_iter().map(|o| (o, o.weight())).collect();
    assert_eq!(
        weights,
        [
            (Owner::Foot, 10),
            (Owner::Boat, 20),
            (Owner::Fishing, 30),
            (Owner::Steal, 40),
            (Owner::Dialogue, 50),
            (Owner::Story, 60),
        ]
    );
    // The weight belongs to the owner: every state weighs what its owner weighs.
    for s in State::ALL {
        assert_eq!(s.weight(), s.owner().weight());
    }
}

#[test]
fn states_per_owner_match_the_article() {
    let count = |o: Owner| State::ALL.iter().filter(|s| s.owner() == o).count();
    assert_eq!(count(Owner::Foot), 1);
    assert_eq!(count(Owner::Boat), 1);
    assert_eq!(count(Owner::Fishing), 4);
    assert_eq!(count(Owner::Story), 2);
    assert_eq!(count(Owner::Dialogue), 1);
    assert_eq!(count(Owner::Steal), 2);
    assert_eq!(Tag::HAND_WRITTEN.len(), 9);
}

#[test]
fn composition_has_360_configurations() {
    // ∏(|S_o| + 1) = 2·2·5·3·2·3 = 360, and each of the 9 hand-written tags doubles it.
    let configs = all_configurations();
    assert_eq!(configs.len(), 360);
    assert_eq!(configs.len() << Tag::HAND_WRITTEN.len(), 184_320);
}

#[test]
fn starts_idle() {
    let (m, _h) = PlayerStateMachine::new();
    assert_eq!(m.effective(), Effective::Idle);
    assert_eq!(m.revision(), 0);
    for o in Owner::ALL {
        assert_eq!(m.held(o), None);
    }
    for t in Tag::ALL {
        assert!(!m.tag(t));
    }
}

#[test]
fn effective_is_the_heaviest_held_state_in_every_configuration() {
    for config in all_configurations() {
        let (m, _h) = machine_with(&config);
        let expected = config
            .iter()
            .copied()
            .max_by_key(|s| s.weight())
            .map_or(Effective::Idle, Effective::State);
        assert_eq!(m.effective(), expected, "{config:?}");
        for s in State::ALL {
            assert_eq!(m.is_state_active(s), config.contains(&s));
        }
    }
}

#[test]
fn effective_does_not_depend_on_write_order() {
    let forward = machine_with(&[WALKING, DRIVING, CASTED, STEALING, TALKING, CUTSCENE]).0;
    let backward = machine_with(&[CUTSCENE, TALKING, STEALING, CASTED, DRIVING, WALKING]).0;
    assert_eq!(forward.effective(), Effective::State(CUTSCENE));
    assert_eq!(forward.effective(), backward.effective());
}

#[test]
fn each_heavier_owner_outranks_every_lighter_one() {
    // Foot < Boat < Fishing < Steal < Dialogue < Story, pairwise.
    let ladder = [WALKING, DRIVING, CASTED, STEALING, TALKING, CUTSCENE];
    for (i, &light) in ladder.iter().enumerate() {
        for &heavy in &ladder[i + 1..] {
            assert_eq!(machine_with(&[light, heavy]).0.effective(), heavy.into());
            assert_eq!(machine_with(&[heavy, light]).0.effective(), heavy.into());
        }
    }
}

#[test]
fn stop_fishing_while_sailing_announces_the_boat() {
    // The transition nobody writes (section 2.3).
    let (mut m, h) = PlayerStateMachine::new();
    assert_eq!(
        h.boat.enter(&mut m, BoatState::Driving),
        changed(Effective::Idle, DRIVING)
    );
    assert_eq!(
        h.fishing.enter(&mut m, FishingState::Casted),
        changed(DRIVING, CASTED)
    );
    assert_eq!(h.fishing.clear(&mut m), changed(CASTED, DRIVING));
    assert_eq!(m.effective(), Effective::State(DRIVING));
    // And leaving the boat goes back to Idle.
    assert_eq!(h.boat.clear(&mut m), changed(DRIVING, Effective::Idle));
}

#[test]
fn ending_a_cutscene_reveals_whatever_was_underneath() {
    let (mut m, h) = machine_with(&[WALKING, TALKING, CUTSCENE]);
    assert_eq!(h.story.clear(&mut m), changed(CUTSCENE, TALKING));
    assert_eq!(h.dialogue.clear(&mut m), changed(TALKING, WALKING));
}

#[test]
fn a_change_under_a_heavier_state_bumps_the_revision_but_announces_nothing() {
    let (mut m, h) = machine_with(&[CUTSCENE]);
    let before = m.revision();
    assert_eq!(h.fishing.enter(&mut m, FishingState::Casted), None);
    assert_eq!(m.revision(), before + 1);
    assert!(m.is_state_active(CASTED));
    assert_eq!(m.effective(), Effective::State(CUTSCENE));
}

#[test]
fn no_op_writes_produce_no_event_and_no_revision_bump() {
    let (mut m, h) = machine_with(&[DRIVING, CASTED]);
    let rev = m.revision();
    let snapshot = m;

    // Entering a held state.
    assert_eq!(h.fishing.enter(&mut m, FishingState::Casted), None);
    assert_eq!(h.boat.enter(&mut m, BoatState::Driving), None);
    // Clearing an owner that holds nothing.
    assert_eq!(h.story.clear(&mut m), None);
    assert_eq!(h.foot.clear(&mut m), None);
    // Leaving a state the owner no longer holds.
    assert_eq!(h.fishing.leave(&mut m, FishingState::Minigame), None);
    assert_eq!(h.steal.leave(&mut m, StealState::Victim), None);
    // Setting a tag to the value it has.
    assert_eq!(h.tags.night.set(&mut m, false), None);
    assert_eq!(h.sub_zones.set(&mut m, SubZone::Reef, false), None);

    assert_eq!(m.revision(), rev);
    assert_eq!(m, snapshot);

    // Twice in a row: the second write of a real change is the no-op.
    assert!(h.tags.night.set(&mut m, true).is_some());
    let rev = m.revision();
    assert_eq!(h.tags.night.set(&mut m, true), None);
    assert_eq!(m.revision(), rev);
}

#[test]
fn every_real_change_bumps_the_revision_by_one() {
    let (mut m, h) = PlayerStateMachine::new();
    let mut expected = 0;
    let mut step = |m: &PlayerStateMachine| {
        expected += 1;
        assert_eq!(m.revision(), expected);
    };
    enter(&mut m, &h, WALKING);
    step(&m);
    enter(&mut m, &h, CHARGING);
    step(&m);
    enter(&mut m, &h, CASTED);
    step(&m);
    h.tags.using_bait.set(&mut m, true);
    step(&m);
    h.sub_zones.set(&mut m, SubZone::Dock, true);
    step(&m);
    clear(&mut m, &h, Owner::Fishing);
    step(&m);
    h.tags.using_bait.set(&mut m, false);
    step(&m);
}

#[test]
fn entering_replaces_the_owners_previous_state() {
    let (mut m, h) = PlayerStateMachine::new();
    h.fishing.enter(&mut m, FishingState::Charging);
    assert_eq!(
        h.fishing.enter(&mut m, FishingState::Casted),
        changed(CHARGING, CASTED)
    );
    assert!(!m.is_state_active(CHARGING));
    assert!(m.is_state_active(CASTED));
    assert_eq!(m.held(Owner::Fishing), Some(CASTED));
    assert_eq!(h.fishing.held(&m), Some(FishingState::Casted));
    // Exactly one fishing state is ever active.
    for next in FishingState::ALL {
        h.fishing.enter(&mut m, *next);
        let active = FishingState::ALL
            .iter()
            .filter(|s| m.is_state_active((**s).into()))
            .count();
        assert_eq!(active, 1);
    }
}

#[test]
fn leave_only_leaves_the_named_phase() {
    let (mut m, h) = PlayerStateMachine::new();
    h.fishing.enter(&mut m, FishingState::Minigame);
    h.fishing.enter(&mut m, FishingState::Cooldown);
    // A late teardown of the minigame must not clear the cooldown guard.
    assert_eq!(h.fishing.leave(&mut m, FishingState::Minigame), None);
    assert_eq!(h.fishing.held(&m), Some(FishingState::Cooldown));
    assert_eq!(
        h.fishing.leave(&mut m, FishingState::Cooldown),
        changed(State::Fishing(FishingState::Cooldown), Effective::Idle)
    );
}

#[test]
fn has_answers_for_states_and_tags_alike() {
    let (mut m, h) = machine_with(&[DRIVING, MINIGAME]);
    h.tags.using_bait.set(&mut m, true);
    h.sub_zones.set(&mut m, SubZone::Reef, true);

    assert!(m.has(Fact::State(DRIVING)));
    assert!(m.has(FishingState::Minigame.into()));
    assert!(!m.has(Fact::State(CASTED)));
    assert!(!m.has(Fact::State(WALKING)));
    assert!(m.has(Fact::Tag(Tag::UsingBait)));
    assert!(m.has(SubZone::Reef.into()));
    assert!(!m.has(Fact::Tag(Tag::SubZone(SubZone::Dock))));
    assert!(!m.has(Tag::Night.into()));

    // has() agrees with is_state_active() and tag() for every fact.
    for fact in Fact::ALL {
        let direct = match fact {
            Fact::State(s) => m.is_state_active(s),
            Fact::Tag(t) => m.tag(t),
        };
        assert_eq!(m.has(fact), direct, "{fact}");
    }
}

#[test]
fn every_tag_can_be_set_and_cleared_independently() {
    let (mut m, h) = PlayerStateMachine::new();
    let t = &h.tags;
    type Write<'a> = &'a dyn Fn(&mut PlayerStateMachine, bool) -> Option<TagChange>;
    let writes: [(Write, Tag); 9] = [
        (&|m, v| t.sprinting.set(m, v), Tag::Sprinting),
        (&|m, v| t.fish_equipped.set(m, v), Tag::FishEquipped),
        (&|m, v| t.using_bait.set(m, v), Tag::UsingBait),
        (&|m, v| t.has_objective.set(m, v), Tag::HasObjective),
        (&|m, v| t.night.set(m, v), Tag::Night),
        (&|m, v| t.post_reveal.set(m, v), Tag::PostReveal),
        (&|m, v| t.menu_open.set(m, v), Tag::MenuOpen),
        (&|m, v| t.using_microphone.set(m, v), Tag::UsingMicrophone),
        (&|m, v| t.afk.set(m, v), Tag::Afk),
    ];
    for (write, tag) in &writes {
        assert_eq!(
            write(&mut m, true),
            Some(TagChange {
                tag: *tag,
                value: true
            })
        );
        assert_eq!(m.active_tags().collect::<Vec<_>>(), [*tag]);
        assert_eq!(
            write(&mut m, false),
            Some(TagChange {
                tag: *tag,
                value: false
            })
        );
    }
    for zone in SubZone::ALL {
        assert!(h.sub_zones.set(&mut m, zone, true).is_some());
        assert!(h.sub_zones.inside(&m, zone));
        assert_eq!(m.active_tags().collect::<Vec<_>>(), [Tag::SubZone(zone)]);
        assert!(h.sub_zones.set(&mut m, zone, false).is_some());
    }
    // Tags never move the effective state.
    assert_eq!(m.effective(), Effective::Idle);
    assert_eq!(t.night.tag(), Tag::Night);
}

#[test]
fn handles_report_their_owner() {
    let (_m, h) = PlayerStateMachine::new();
    assert_eq!(h.foot.owner(), Owner::Foot);
    assert_eq!(h.boat.owner(), Owner::Boat);
    assert_eq!(h.fishing.owner(), Owner::Fishing);
    assert_eq!(h.steal.owner(), Owner::Steal);
    assert_eq!(h.dialogue.owner(), Owner::Dialogue);
    assert_eq!(h.story.owner(), Owner::Story);
    assert_eq!(format!("{:?}", h.fishing), "OwnerHandle<Fishing>");
}

#[test]
fn the_machine_is_small_copy_data() {
    fn is_copy<T: Copy>() {}
    is_copy::<PlayerStateMachine>();
    let size = core::mem::size_of::<PlayerStateMachine>();
    // Six 2-byte regions, a u32 tag set, the cached effective state and a u64 revision.
    assert!(size <= 32, "PlayerStateMachine is {size} bytes");
    // Handles carry no data at all.
    assert_eq!(core::mem::size_of::<banter_player::OwnerHandles>(), 0);
}
