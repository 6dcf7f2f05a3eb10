//! Stable names: every state, tag and fact round-trips through its name, unknown names are a
//! typed error, and serde uses the same names.

// Tests may unwrap: every value here is built by the test itself.
#![allow(clippy::unwrap_used)]

use banter_player::{
    BoatState, DialogueState, Effective, Fact, FishingState, FootState, NameKind, Owner, State,
    StealState, StoryState, SubZone, Tag, UnknownName,
};
use std::collections::HashSet;
use std::str::FromStr;

#[test]
fn state_names_are_the_articles() {
    let names: Vec<&str> = State::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "Foot.Walking",
            "Boat.Driving",
            "Fishing.Charging",
            "Fishing.Casted",
            "Fishing.Minigame",
            "Fishing.Cooldown",
            "Steal.Stealing",
            "Steal.Victim",
            "Dialogue.Talking",
            "Story.Cutscene",
            "Story.IslandTour",
        ]
    );
    for s in State::ALL {
        assert!(s.name().starts_with(&format!("{}.", s.owner().name())));
    }
}

#[test]
fn tag_names_are_the_articles_plus_one_per_sub_zone() {
    let names: Vec<&str> = Tag::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "Sprinting",
            "FishEquipped",
            "UsingBait",
            "HasObjective",
            "Night",
            "PostReveal",
            "MenuOpen",
            "UsingMicrophone",
            "Afk",
            "SubZone.Dock",
            "SubZone.Beach",
            "SubZone.Market",
            "SubZone.Lighthouse",
            "SubZone.Reef",
        ]
    );
    // The sub-zone tags come from the sub-zone list, one each.
    assert_eq!(Tag::COUNT, Tag::HAND_WRITTEN.len() + SubZone::ALL.len());
    for z in SubZone::ALL {
        assert!(Tag::ALL.contains(&Tag::SubZone(z)));
        assert_eq!(z.tag().name(), z.name());
    }
}

fn round_trip<T>(all: &[T], kind: NameKind, name: impl Fn(&T) -> &'static str)
where
    T: FromStr<Err = UnknownName> + PartialEq + core::fmt::Debug + core::fmt::Display,
{
    let mut seen = HashSet::new();
    for x in all {
        assert_eq!(name(x).parse::<T>().as_ref(), Ok(x));
        assert_eq!(x.to_string(), name(x));
        assert!(seen.insert(name(x)), "duplicate name {}", name(x));
    }
    for bad in [
        "",
        "Fishing.Cast",
        "fishing.casted",
        "Fishing.Casted ",
        "Idl",
        "SubZone.Rain",
    ] {
        if all.iter().any(|x| name(x) == bad) {
            continue;
        }
        let err = bad.parse::<T>().unwrap_err();
        assert_eq!(err.kind, kind);
        assert_eq!(err.name, bad);
    }
}

#[test]
fn every_name_round_trips_and_unknown_names_are_rejected() {
    round_trip(&Owner::ALL, NameKind::Owner, |o| o.name());
    round_trip(&State::ALL, NameKind::State, |s| s.name());
    round_trip(&Tag::ALL, NameKind::Tag, |t| t.name());
    round_trip(&SubZone::ALL, NameKind::SubZone, |z| z.name());
    round_trip(&Fact::ALL, NameKind::Fact, |f| f.name());
    round_trip(&Effective::ALL, NameKind::Effective, |e| e.name());
    round_trip(FootState::ALL, NameKind::OwnerState(Owner::Foot), |s| {
        s.name()
    });
    round_trip(BoatState::ALL, NameKind::OwnerState(Owner::Boat), |s| {
        s.name()
    });
    round_trip(
        FishingState::ALL,
        NameKind::OwnerState(Owner::Fishing),
        |s| s.name(),
    );
    round_trip(StealState::ALL, NameKind::OwnerState(Owner::Steal), |s| {
        s.name()
    });
    round_trip(
        DialogueState::ALL,
        NameKind::OwnerState(Owner::Dialogue),
        |s| s.name(),
    );
    round_trip(StoryState::ALL, NameKind::OwnerState(Owner::Story), |s| {
        s.name()
    });
}

#[test]
fn fact_covers_every_state_and_tag_with_disjoint_names() {
    assert_eq!(Fact::ALL.len(), State::COUNT + Tag::COUNT);
    for s in State::ALL {
        assert_eq!(s.name().parse::<Fact>(), Ok(Fact::State(s)));
        assert!(Tag::from_str(s.name()).is_err());
    }
    for t in Tag::ALL {
        assert_eq!(t.name().parse::<Fact>(), Ok(Fact::Tag(t)));
        assert!(State::from_str(t.name()).is_err());
    }
    assert!("Idle".parse::<Fact>().is_err(), "Idle is not a fact");
}

#[test]
fn a_state_of_another_owner_is_not_this_owners_state() {
    let err = "Boat.Driving".parse::<FishingState>().unwrap_err();
    assert_eq!(err.kind, NameKind::OwnerState(Owner::Fishing));
    assert_eq!(
        err.to_string(),
        "unknown Fishing state name \"Boat.Driving\""
    );
    assert_eq!(
        FishingState::try_from(State::Boat(BoatState::Driving)),
        Err(State::Boat(BoatState::Driving))
    );
    assert_eq!(
        FishingState::try_from(State::Fishing(FishingState::Casted)),
        Ok(FishingState::Casted)
    );
}

#[test]
fn error_messages_name_the_typo() {
    let err = "Fishing.Cast".parse::<Fact>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown fact (state or tag) name \"Fishing.Cast\""
    );
}

#[test]
fn serde_uses_the_stable_names() {
    let facts: Vec<Fact> =
        serde_json::from_str(r#"["Fishing.Casted", "UsingBait", "SubZone.Dock"]"#).unwrap();
    assert_eq!(
        facts,
        [
            Fact::State(State::Fishing(FishingState::Casted)),
            Fact::Tag(Tag::UsingBait),
            Fact::Tag(Tag::SubZone(SubZone::Dock)),
        ]
    );
    assert_eq!(
        serde_json::to_string(&facts).unwrap(),
        r#"["Fishing.Casted","UsingBait","SubZone.Dock"]"#
    );
    for e in Effective::ALL {
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Effective>(&json).unwrap(), e);
    }
    let owner: Owner = serde_json::from_str(r#""Story""#).unwrap();
    assert_eq!(owner, Owner::Story);

    // A typo in a catalog is a load-time error that names it.
    let err = serde_json::from_str::<Vec<Fact>>(r#"["UsingBiat"]"#).unwrap_err();
    assert!(err.to_string().contains("UsingBiat"), "{err}");
    assert!(serde_json::from_str::<Fact>("42").is_err());
    assert!(serde_json::from_str::<StoryState>(r#""Story.Cutscene""#).is_ok());
    assert!(serde_json::from_str::<StoryState>(r#""Dialogue.Talking""#).is_err());
}
