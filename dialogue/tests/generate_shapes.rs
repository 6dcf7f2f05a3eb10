//! The content generator: both quest shapes, the talk-only ordering as a client walks it, and
//! clear errors for bad transcriptions.

mod content_support;

use banter_dialogue::generate::{self, GenError, Generated};
use banter_dialogue::{ClientWalk, DialogueGraph, NoFacts, Outgoing, Screen, build_conversation};
use banter_protocol::ActionType;
use content_support::{expect_error_starting, generate_errors};

const TRANSCRIPTION: &str = r#"{
  "Npc": { "Id": "mara", "Name": "Mara", "Island": "harbour", "Position": [1.0, 2.0, 3.0] },
  "Conversation": "Mara",
  "Lines": { "Greeting": "Morning.", "Goodbye": "Bye now.", "AllDone": "All sorted." },
  "Quests": [
    {
      "Id": "MendTheNets", "Kind": "side", "Shape": "work",
      "Objectives": [ { "Id": "Twine", "Kind": "find", "Target": 3 } ],
      "Rewards": { "Coins": 10, "Experience": 5 },
      "Ask": "Need help?",
      "Lines": { "Offer": "Find me twine.", "Accept": "Thanks.", "Decline": "Pity.",
                 "Check": "Got it?", "Reminder": "Not yet.", "Completion": "Lovely." }
    },
    {
      "Id": "Story", "Kind": "story", "Shape": "talk", "Prerequisites": ["MendTheNets"],
      "Objectives": [ { "Id": "Listen", "Kind": "talk", "Island": "harbour" } ],
      "Ask": "Tell me a story.",
      "Lines": { "Offer": "Want a story?", "Accept": "Sit down.", "Decline": "Later then.",
                 "Reminder": "Where was I?", "Intermediate": "Once upon a tide...",
                 "Completion": "The end." }
    }
  ]
}"#;

fn gen_one(text: &str) -> Result<Generated, Vec<GenError>> {
    generate::generate(&[("mara.json".to_owned(), text.as_bytes().to_vec())])
}

fn graph() -> DialogueGraph {
    let out = gen_one(TRANSCRIPTION).expect("generates");
    let (graph, diagnostics) = build_conversation("Mara", &out["dialogue/base/Mara.json"]);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    graph
}

fn types(graph: &DialogueGraph, out: &[Outgoing]) -> Vec<ActionType> {
    out.iter()
        .filter_map(|o| match o {
            Outgoing::Action(i) => Some(graph.action(*i).expect("action").action_type),
            _ => None,
        })
        .collect()
}

#[test]
fn generates_the_three_kinds_of_file_deterministically() {
    let out = gen_one(TRANSCRIPTION).expect("generates");
    assert_eq!(
        out.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "dialogue/base/Mara.json",
            "quests.generated/mara.json",
            "world.generated/mara.json"
        ]
    );
    assert!(
        out.values()
            .all(|t| t.ends_with("}\n") || t.ends_with("]\n"))
    );
    assert_eq!(out, gen_one(TRANSCRIPTION).expect("again"));
    let quests: Vec<banter_dialogue::content::QuestDef> =
        serde_json::from_str(&out["quests.generated/mara.json"]).expect("quests parse");
    assert_eq!(quests.len(), 2);
    let nets = &quests[0];
    assert_eq!(nets.id, "MendTheNets");
    assert_eq!(nets.giver, "mara");
    assert_eq!(nets.nodes.greeting, "MendTheNets_Greet");
    assert_eq!(nets.nodes.check, "MendTheNets_Check");
    assert_eq!(
        nets.nodes.completion.as_deref(),
        Some("MendTheNets_Complete")
    );
    assert_eq!(quests[1].prerequisites, ["MendTheNets"]);
    let world: banter_dialogue::content::World =
        serde_json::from_str(&out["world.generated/mara.json"]).expect("world parses");
    assert_eq!(world.npcs[0].id, "mara");
    assert_eq!(world.npcs[0].conversation, "Mara");
}

#[test]
fn every_generated_node_is_there() {
    let graph = graph();
    for node in [
        "Mara_Hello",
        "Mara_Bye",
        "AllDone",
        "MendTheNets_Greet",
        "MendTheNets_Accepted",
        "MendTheNets_Declined",
        "MendTheNets_Check",
        "MendTheNets_NotYet",
        "MendTheNets_Complete",
        "Story_Greet",
        "Story_Accepted",
        "Story_Check",
        "Story_Telling",
        "Story_Complete",
    ] {
        assert!(graph.find(node).is_some(), "{node}");
    }
}

#[test]
fn a_work_quest_accepts_then_checks_with_success_and_failure_nodes() {
    let graph = graph();
    // Accept: the action is held until the player moves past the reply.
    let mut out = Vec::new();
    let greet = graph.find("MendTheNets_Greet").expect("greet");
    let mut walk = ClientWalk::open(&graph, greet, &NoFacts, &mut out).expect("open");
    let accept = graph.find("MendTheNets_Greet_r1").expect("accept response");
    walk.choose(&graph, accept, &NoFacts, &mut out)
        .expect("choose");
    while walk.screen() != Screen::Ended {
        walk.advance_current(&graph, &NoFacts, &mut out)
            .expect("advance");
    }
    assert_eq!(types(&graph, &out), [ActionType::AcceptQuest]);

    // Check: the response carries CheckQuest and waits for the server's jump.
    let mut out = Vec::new();
    let check = graph.find("MendTheNets_Check").expect("check");
    let mut walk = ClientWalk::open(&graph, check, &NoFacts, &mut out).expect("open");
    let hand_in = graph.find("MendTheNets_Check_r1").expect("hand in");
    walk.choose(&graph, hand_in, &NoFacts, &mut out)
        .expect("choose");
    assert_eq!(walk.screen(), Screen::Waiting);
    assert_eq!(types(&graph, &out), [ActionType::CheckQuest]);
    let payload = &graph
        .all_actions()
        .iter()
        .find(|a| a.action_type == ActionType::CheckQuest)
        .expect("check")
        .payload;
    assert_eq!(
        &**payload,
        "MendTheNets|MendTheNets_Complete|MendTheNets_NotYet"
    );
    // The failure line closes; the next talk opens on the check node again (the resolver).
    let not_yet = graph.find("MendTheNets_NotYet").expect("not yet");
    walk.jump(&graph, not_yet, &NoFacts, &mut out)
        .expect("jump");
    assert_eq!(walk.screen(), Screen::Line(not_yet));
    let complete = graph.find("MendTheNets_Complete").expect("complete");
    let mut out = Vec::new();
    ClientWalk::open(&graph, complete, &NoFacts, &mut out).expect("open");
    assert_eq!(types(&graph, &out), [ActionType::CompleteQuest]);
}

#[test]
fn a_talk_quest_sends_accept_before_advance_and_complete() {
    let graph = graph();
    let mut out = Vec::new();
    let greet = graph.find("Story_Greet").expect("greet");
    let mut walk = ClientWalk::open(&graph, greet, &NoFacts, &mut out).expect("open");
    let accept = graph.find("Story_Greet_r1").expect("accept response");
    walk.choose(&graph, accept, &NoFacts, &mut out)
        .expect("choose");
    // Nothing is sent yet: the acceptance waits for the player to move past the reply.
    assert!(types(&graph, &out).is_empty());
    while walk.screen() != Screen::Ended {
        walk.advance_current(&graph, &NoFacts, &mut out)
            .expect("advance");
    }
    assert_eq!(
        types(&graph, &out),
        [
            ActionType::AcceptQuest,
            ActionType::AdvanceObjective,
            ActionType::CompleteQuest
        ]
    );
    let advance = graph
        .all_actions()
        .iter()
        .find(|a| a.action_type == ActionType::AdvanceObjective)
        .expect("advance");
    assert_eq!(&*advance.payload, "Story|Listen|1|harbour");
}

#[test]
fn an_interrupted_talk_quest_resumes_from_its_check_node() {
    let graph = graph();
    let mut out = Vec::new();
    let check = graph.find("Story_Check").expect("check");
    let mut walk = ClientWalk::open(&graph, check, &NoFacts, &mut out).expect("open");
    while walk.screen() != Screen::Ended {
        walk.advance_current(&graph, &NoFacts, &mut out)
            .expect("advance");
    }
    assert_eq!(
        types(&graph, &out),
        [ActionType::AdvanceObjective, ActionType::CompleteQuest]
    );
}

fn errors_of(text: &str) -> Vec<String> {
    generate_errors(&[("mara.json".to_owned(), text.as_bytes().to_vec())])
}

fn assert_error(text: &str, expected: &str) {
    let errors = errors_of(text);
    assert!(
        errors.iter().any(|e| e.contains(expected)),
        "expected {expected:?} in {errors:#?}"
    );
    assert!(
        errors.iter().all(|e| e.starts_with("mara.json: ")),
        "{errors:#?}"
    );
}

#[test]
fn malformed_json_and_unknown_fields_name_the_file() {
    assert_error("{", "mara.json: not a transcription: EOF");
    assert_error(
        &TRANSCRIPTION.replace("\"Conversation\"", "\"Conversaton\""),
        "unknown field `Conversaton`",
    );
    assert_error(
        &TRANSCRIPTION.replace("\"Shape\": \"talk\"", "\"Shape\": \"song\""),
        "unknown variant `song`",
    );
}

#[test]
fn bad_fields_are_named() {
    assert_error(
        &TRANSCRIPTION.replace("\"Id\": \"mara\"", "\"Id\": \"ma ra\""),
        "mara.json: Npc.Id: `ma ra` is not a name",
    );
    assert_error(
        &TRANSCRIPTION.replace("\"Greeting\": \"Morning.\"", "\"Greeting\": \" \""),
        "Lines.Greeting: must not be empty",
    );
    assert_error(
        &TRANSCRIPTION.replace("\"Check\": \"Got it?\", ", ""),
        "Quests[0].Lines.Check: a work quest needs a check line",
    );
    assert_error(
        &TRANSCRIPTION.replace("\"Intermediate\": \"Once upon a tide...\",", ""),
        "Quests[1].Lines.Intermediate: a talk quest needs the line between",
    );
    assert_error(
        &TRANSCRIPTION.replace("\"Kind\": \"talk\"", "\"Kind\": \"catch\""),
        "Quests[1].Objectives: a talk quest has exactly one talk objective",
    );
    assert_error(
        &TRANSCRIPTION.replace("\"Kind\": \"find\", \"Target\": 3", "\"Kind\": \"talk\""),
        "Quests[0].Objectives[0].Kind: a work quest's objectives are caught or found",
    );
    assert_error(
        &TRANSCRIPTION.replace("\"Target\": 3", "\"Target\": 0"),
        "Quests[0].Objectives[0].Target: must be at least 1",
    );
    assert_error(
        &TRANSCRIPTION.replace("\"Id\": \"Story\"", "\"Id\": \"MendTheNets\""),
        "Quests[1].Id: quest `MendTheNets` is transcribed twice",
    );
    assert_error(
        &TRANSCRIPTION.replace("[\"MendTheNets\"]", "[\"Story\"]"),
        "Quests[1].Prerequisites[0]: a quest cannot require itself",
    );
}

#[test]
fn duplicates_across_files_are_refused_and_nothing_is_generated() {
    let files = vec![
        ("a.json".to_owned(), TRANSCRIPTION.as_bytes().to_vec()),
        ("b.json".to_owned(), TRANSCRIPTION.as_bytes().to_vec()),
    ];
    let errors = generate_errors(&files);
    assert!(
        errors.contains(&"b.json: Npc.Id: NPC `mara` is also transcribed in a.json".to_owned()),
        "{errors:#?}"
    );
    expect_error_starting(&errors, "b.json: Conversation: conversation `Mara`");
    expect_error_starting(&errors, "b.json: Quests[0].Id: quest `MendTheNets`");
}
