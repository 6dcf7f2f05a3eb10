//! The sample game in `content/` loads, checks clean, has every feature it is there to show,
//! and every conversation exports to a picture that holds together.

mod content_support;

use std::collections::BTreeSet;

use banter_dialogue::check;
use banter_dialogue::content::Content;
use banter_dialogue::export;
use banter_dialogue::{DialogueGraph, Exit, VertexKind};
use banter_protocol::ActionType;
use content_support::{render, sample_content};

fn sample() -> Content {
    let (content, diagnostics) = check::load_and_check(&sample_content());
    assert!(
        diagnostics.is_empty(),
        "the sample content is clean:\n{}",
        render(&diagnostics)
    );
    content
}

#[test]
fn the_sample_content_loads_and_checks_clean() {
    let content = sample();
    assert!(content.world.islands.len() >= 4);
    assert!(content.world.npcs.len() >= 13);
    assert!(content.quests.len() >= 16);
    assert_eq!(
        content
            .conversations
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        [
            "Bram", "Fennick", "Hattie", "Ines", "Marisol", "Oswin", "Pim", "Skipper", "Tamsin",
            "Wren"
        ]
    );
}

#[test]
fn the_party_quest_is_a_shared_conversation() {
    use banter_dialogue::ChoiceRule;
    use banter_protocol::{ChoiceMode, TieRule};
    let content = sample();
    let wren = content
        .world
        .npcs
        .iter()
        .find(|n| n.id == "wren")
        .expect("Wren");
    assert_eq!(wren.conversation, "Wren");
    let graph = &content.conversations["Wren"];
    let majority = ChoiceRule {
        mode: ChoiceMode::Majority,
        time_limit_secs: Some(20),
        tie: TieRule::Leader,
    };
    assert_eq!(graph.shared(), Some(majority));
    let rowing = graph.find("Ferry_Rowing").expect("Ferry_Rowing");
    assert_eq!(
        graph.choice_rule(rowing).map(|r| r.mode),
        Some(ChoiceMode::Roll)
    );
    // Every other conversation is walked alone.
    for (name, g) in &content.conversations {
        assert_eq!(g.shared().is_some(), name == "Wren", "{name}");
    }
    // Each participant accepts for themself on a line; the check completes the quest; one
    // response only some players are shown.
    let on_lines = |t: ActionType| {
        graph.all_actions().iter().any(|a| {
            a.action_type == t
                && graph
                    .vertex(a.vertex)
                    .is_some_and(|v| v.kind == VertexKind::Prompt)
        })
    };
    assert!(on_lines(ActionType::AcceptQuest) && on_lines(ActionType::CompleteQuest));
    assert!(
        graph
            .all_actions()
            .iter()
            .any(|a| a.action_type == ActionType::CheckQuest)
    );
    let launch = graph.find("Ferry_Greet_r3").expect("the launch");
    assert!(graph.condition(launch).is_some());
    let quest = content.quest("FerryForTwo").expect("FerryForTwo");
    assert_eq!(quest.giver, "wren");
}

#[test]
fn four_boat_managers_share_a_name_one_per_island() {
    let content = sample();
    let skippers: Vec<_> = content
        .world
        .npcs
        .iter()
        .filter(|n| n.name == "Skipper Dunmore")
        .collect();
    assert_eq!(skippers.len(), 4);
    let ids: BTreeSet<&str> = skippers.iter().map(|n| n.id.as_str()).collect();
    let islands: BTreeSet<&str> = skippers.iter().map(|n| n.island.as_str()).collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(islands.len(), 4);
    assert!(skippers.iter().all(|n| n.conversation == "Skipper"));
}

#[test]
fn every_action_type_is_used_and_the_quests_have_their_shapes() {
    let content = sample();
    let used: BTreeSet<ActionType> = content
        .conversations
        .values()
        .flat_map(|g| g.all_actions().iter().map(|a| a.action_type))
        .collect();
    assert_eq!(used, ActionType::ALL.into_iter().collect());
    let payloads: Vec<&str> = content
        .conversations
        .values()
        .flat_map(|g| g.all_actions().iter().map(|a| &*a.payload))
        .collect();
    // An island forces the amount, even when it is 1.
    assert!(payloads.contains(&"PimsTideTale|HearTheTale|1|mistral_cay"));

    use banter_dialogue::content::ObjectiveKind;
    let kinds: BTreeSet<String> = content
        .quests
        .iter()
        .flat_map(|q| q.objectives.iter().map(|o| format!("{:?}", o.kind)))
        .collect();
    assert!(kinds.contains(&format!("{:?}", ObjectiveKind::Catch)));
    assert!(kinds.contains(&format!("{:?}", ObjectiveKind::Talk)));
    assert!(content.quests.iter().any(|q| q.cutscene.is_some()));
}

#[test]
fn wren_after_the_ferry_uses_every_writing_power() {
    use banter_dialogue::condition::{Reference, VarType};
    use banter_dialogue::model::{Next, Pick};
    use banter_protocol::Action;
    let content = sample();
    // Story variables of every type, and a derived one, written into the conditions.
    let vars = &content.variables;
    let types: BTreeSet<&str> = vars.declared.values().map(|d| d.ty.name()).collect();
    assert_eq!(types.len(), VarType::ALL.len(), "{types:?}");
    assert!(!vars.derived.is_empty());
    let wren = &content.merged["Wren"];
    let graph = &content.conversations["Wren"];
    let conditions: Vec<&str> = wren
        .nodes
        .values()
        .flat_map(|n| {
            let responses = match &n.exit {
                Exit::Responses(r) => r.iter().filter_map(|r| r.conditions.as_deref()).collect(),
                _ => Vec::new(),
            };
            n.conditions.as_deref().into_iter().chain(responses)
        })
        .collect();
    assert!(
        vars.derived
            .values()
            .any(|d| conditions.iter().any(|c| c.contains(&format!("({d})")))),
        "a derived variable is read: {conditions:?}"
    );
    // A SetVariable whose variable a condition reads.
    let set: BTreeSet<&str> = graph
        .all_actions()
        .iter()
        .filter_map(|a| match &a.action {
            Action::SetVariable { variable, .. } => Some(variable.as_str()),
            _ => None,
        })
        .collect();
    let mut read = BTreeSet::new();
    let mut visits = 0;
    for text in &conditions {
        let condition = banter_dialogue::Condition::parse(text).expect("parses");
        condition.visit_references(&mut |r| match r {
            Reference::Variable(v) => {
                read.insert(v.to_owned());
            }
            Reference::Visits(_) => visits += 1,
            _ => {}
        });
    }
    assert!(
        set.iter().all(|v| read.contains(*v)),
        "{set:?} read in {read:?}"
    );
    // A greeting that changes on a second visit.
    assert!(visits > 0, "visited(...) is read");
    // Once, on a line and on a response; a greyed-out response with its reason's id.
    assert!(wren.nodes.values().any(|n| n.once));
    let responses: Vec<&banter_dialogue::model::Response> = wren
        .nodes
        .values()
        .filter_map(|n| match &n.exit {
            Exit::Responses(r) => Some(r),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(responses.iter().any(|r| r.once));
    assert!(
        responses
            .iter()
            .any(|r| r.disabled.is_some() && r.disabled_line.is_some() && r.conditions.is_some())
    );
    // An idle group by recency, and storylets by specificity.
    let picks: BTreeSet<&str> = responses
        .iter()
        .filter_map(|r| match &r.next {
            Some(Next::Group(g)) => Some(g.pick.name()),
            _ => None,
        })
        .collect();
    assert!(
        picks.contains(Pick::LeastRecent.name()) && picks.contains(Pick::MostSpecific.name()),
        "{picks:?}"
    );
    assert_eq!(graph.groups().len(), 2);
}

#[test]
fn the_quest_check_loop_comes_back_to_the_check_node() {
    let content = sample();
    let quest = content.quest("CopperSnappers").expect("CopperSnappers");
    let graph = &content.conversations["Fennick"];
    let check_node = graph.find(&quest.nodes.check).expect("check node");
    let failure = graph
        .all_actions()
        .iter()
        .find_map(|a| match &a.action {
            banter_protocol::Action::CheckQuest { failure_node, .. } => Some(failure_node.clone()),
            _ => None,
        })
        .expect("a CheckQuest");
    let failure = graph.find(&failure).expect("failure node");
    // The failure line offers a way straight back to the check.
    let back = graph
        .outputs(failure)
        .iter()
        .any(|&r| graph.outputs(r).contains(&check_node));
    assert!(back, "the failure node leads back to the check node");
}

#[test]
fn layers_patch_and_lockout_are_merged() {
    let content = sample();
    let fennick = &content.merged["Fennick"];
    let hello = &fennick.nodes["Fennick_Hello"];
    // The side layer's patch changed only the text.
    assert!(hello.text.contains("reel oil"), "{}", hello.text);
    assert!(matches!(&hello.exit, Exit::Responses(r) if r.len() == 2));
    assert!(fennick.origin["Fennick_Hello"].ends_with("side/Fennick.json"));
    assert!(content.merged["Ines"].origin["Voyage_Greet"].ends_with("story/Ines.json"));
    assert!(content.lockout_nodes.contains("Tutorial_Stage1"));
    for graph in content.conversations.values() {
        assert!(
            graph.find("Tutorial_Stage2").is_some(),
            "{} has the lockout",
            graph.name()
        );
    }
    // The editor-format conversation is there, as any other.
    assert!(content.merged["Skipper"].origin["Skipper_Hello"].ends_with("Skipper.editor.json"));
}

#[test]
fn a_branch_with_conditions_on_its_targets() {
    let content = sample();
    let graph = &content.conversations["Marisol"];
    let (branch, _) = graph
        .vertices()
        .find(|(_, v)| v.kind == VertexKind::Branch)
        .expect("a branch");
    let gated = graph
        .outputs(branch)
        .iter()
        .filter(|&&t| graph.condition(t).is_some())
        .count();
    assert_eq!(gated, 3);
}

/// A small structural reading of a picture: braces (outside quoted strings) balance, quotes
/// close, and every vertex appears.
fn sane(text: &str, graph: &DialogueGraph, dot: bool) {
    let mut depth = 0i64;
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') if dot => escaped = true,
                (false, '"') => in_string = false,
                (false, '\n') => panic!("a line break inside a quoted label:\n{text}"),
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' if dot => depth += 1,
            '}' if dot => {
                depth -= 1;
                assert!(depth >= 0, "unbalanced braces:\n{text}");
            }
            _ => {}
        }
    }
    assert!(!in_string, "an unclosed quote:\n{text}");
    assert_eq!(depth, 0, "unbalanced braces:\n{text}");
    let declared: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| {
            l.trim_start()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()
        })
        .filter(|w| w.starts_with('v') && w[1..].chars().all(|c| c.is_ascii_digit()) && w.len() > 1)
        .collect();
    for (id, _) in graph.vertices() {
        assert!(
            declared.contains(format!("v{}", id.0).as_str()),
            "v{} is drawn",
            id.0
        );
    }
    let edges = graph
        .vertices()
        .map(|(id, _)| graph.outputs(id).len())
        .sum::<usize>();
    let arrows = text.matches(if dot { " -> " } else { "-->" }).count();
    assert!(arrows >= edges, "{arrows} arrows for {edges} edges");
}

#[test]
fn every_sample_conversation_exports_to_sane_dot_and_mermaid() {
    let content = sample();
    for graph in content.conversations.values() {
        let dot = export::to_dot(graph);
        assert!(dot.starts_with("digraph \""), "{dot}");
        sane(&dot, graph, true);
        let mermaid = export::to_mermaid(graph);
        assert!(mermaid.contains("\nflowchart TD\n"), "{mermaid}");
        sane(&mermaid, graph, false);
        // Quest checks draw their two outcomes as dashed jumps.
        let checks = graph
            .all_actions()
            .iter()
            .filter(|a| a.action_type == ActionType::CheckQuest)
            .count();
        assert_eq!(
            dot.matches("style=dashed").count(),
            2 * checks,
            "{}",
            graph.name()
        );
        assert_eq!(
            mermaid.matches("-.->").count(),
            2 * checks,
            "{}",
            graph.name()
        );
    }
}

#[test]
fn hostile_text_cannot_break_a_picture() {
    let json = r##"{
      "FirstNode": "A", "Speaker": "Quote \" Brace } Hash # <b>",
      "A": { "Text": "He said \"hi\" \\ then }{ left\nand <br/> #quot; `code`",
             "Responses": [ { "Text": "\"\"\"", "NextNode": "B" }, { "Text": "}}}", "NextNode": "B" } ] },
      "B": { "Text": "\\", "Close": true }
    }"##;
    let (graph, diagnostics) = banter_dialogue::build_conversation("Evil\"Name}", json);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let dot = export::to_dot(&graph);
    sane(&dot, &graph, true);
    assert!(
        !dot.contains("#quot;`"),
        "dot keeps text as is, escaped only for dot"
    );
    let mermaid = export::to_mermaid(&graph);
    sane(&mermaid, &graph, false);
    assert!(
        !mermaid.contains("<b>") && !mermaid.contains("`"),
        "{mermaid}"
    );
}

/// With graphviz installed, the picture renders (not required: CI may not have it).
#[test]
fn dot_renders_when_graphviz_is_installed() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let content = sample();
    let dot = export::to_dot(&content.conversations["Fennick"]);
    let Ok(mut child) = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("graphviz is not installed; skipping the render");
        return;
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(dot.as_bytes())
        .expect("write to dot");
    let output = child.wait_with_output().expect("dot runs");
    assert!(
        output.status.success(),
        "dot rejected the picture: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("<svg"));
}
