import { test } from 'node:test';
import assert from 'node:assert/strict';

import { buildGraph, compareUtf8, ContentError } from '../src/index.js';
import { baseConversation, recorded } from './fixtures.js';

test("Pim's recorded content builds without problems, named as on the wire", () => {
  const graph = buildGraph(recorded('pim-content'), 'Pim');
  assert.deepEqual(graph.problems, []);
  assert.equal(graph.speaker, 'Pim');
  assert.equal(graph.firstNode, 'Pim_Hello');
  const greet = graph.find('PimsTideTale_Greet');
  assert.equal(greet.kind, 'line');
  assert.deepEqual(greet.outputs.map((id) => graph.vertex(id).name), ['PimsTideTale_Greet_r1', 'PimsTideTale_Greet_r2']);
  const r1 = graph.find('PimsTideTale_Greet_r1');
  assert.equal(r1.kind, 'response');
  assert.equal(r1.priority, 1);
  assert.equal(r1.text, 'Go on, tell me.');
  assert.deepEqual(r1.actions.map((a) => [a.type, a.payload]), [['AcceptQuest', 'PimsTideTale']]);
  assert.deepEqual(graph.find('PimsTideTale_Ending').actions.map((a) => a.payload), ['PimsTideTale|HearTheTale|1|mistral_cay']);
  assert.equal(graph.find('PimsTideTale_Complete').close, true);
  assert.equal(graph.find('Tutorial_Stage1').conditionText, 'tutorial_stage == 1');
  // Root, then the lines in key order, then responses.
  assert.equal(graph.vertex(0).kind, 'root');
  assert.deepEqual(graph.vertex(0).outputs, [graph.find('Pim_Hello').id]);
  const lines = graph.lines().map((v) => v.name);
  assert.deepEqual(lines, [...lines].sort(compareUtf8));
  assert.equal(graph.find('AllDone').id, 1);
});

test('a base file of the sample content builds too (line ids, CheckQuest)', () => {
  const graph = buildGraph(baseConversation('Fennick'), 'Fennick');
  assert.deepEqual(graph.problems, []);
  assert.equal(graph.find('Fennick_Hello').lineId, 'line:8e8d6c658d');
  assert.equal(graph.find('CopperSnappers_Check_r1').awaitsJump, true);
  assert.equal(graph.find('CopperSnappers_Check').awaitsJump, false);
  assert.equal(graph.find('CopperSnappers_Check_r1').actions[0].payload, 'CopperSnappers|CopperSnappers_Complete|CopperSnappers_NotYet');
});

test('a NextNode list is a branch vertex named <node>_b<id>, never a line', () => {
  const graph = buildGraph({
    A: { Text: 'a', NextNode: ['C', 'B'] },
    B: { Text: 'b', Responses: [{ Text: 'r1', NextNode: ['A', 'C'] }, { Text: 'r2' }] },
    C: { Text: 'c', Conditions: ['coins > 1', 'has(X)'] },
  });
  assert.deepEqual(graph.problems, []);
  // 0 root, 1-3 lines, A's branch 4, B's responses 5-6, B_r1's branch 7.
  assert.deepEqual(graph.vertices.map((v) => `${v.kind}:${v.name}`), [
    'root:',
    'line:A',
    'line:B',
    'line:C',
    'branch:A_b4',
    'response:B_r1',
    'response:B_r2',
    'branch:B_b7',
  ]);
  assert.deepEqual(graph.find('A_b4').outputs, [3, 2]);
  assert.equal(graph.find('C').conditionText, '(coins > 1) && (has(X))');
});

test('problems are listed, not thrown: the rest still works (fail closed)', () => {
  const graph = buildGraph({
    FirstNode: 'Nowhere',
    Ok: { Text: 'fine', NextNode: 'Missing' },
    BadField: { Text: 'x', Colour: 'red' },
    BadCondition: { Text: 'x', Conditions: 'gold > 3' },
    TwoExits: { Text: 'x', NextNode: 'Ok', Close: true },
    BadAction: { Text: 'x', Actions: [{ Type: 'Teleport' }] },
    BadAmount: { Text: 'x', Actions: [{ Type: 'AdvanceObjective', QuestId: 'Q', ObjectiveId: 'O', Amount: 0 }] },
    Patch: { Patch: true, Text: 'x' },
  });
  assert.equal(graph.find('Ok').outputs.length, 0, 'the dangling edge is skipped');
  for (const gone of ['BadField', 'TwoExits', 'BadAction', 'BadAmount', 'Patch']) assert.equal(graph.find(gone), undefined, gone);
  assert.deepEqual(graph.find('BadCondition').condition, { kind: 'const', value: false });
  const all = graph.problems.join('\n');
  for (const said of ['FirstNode: no node named "Nowhere"', 'no node named "Missing"', 'unknown field `Colour`', 'unknown name `gold`', 'at most one exit', 'unknown action type `Teleport`', 'Amount must be a whole number', 'a patch of nothing']) {
    assert.ok(all.includes(said), `problems mention ${said}:\n${all}`);
  }
});

test('Close: false is no exit; Voice is read; a node named like a response keeps its name', () => {
  const graph = buildGraph({
    A: { Text: 'a', Close: false, Voice: { Clip: 'voice/ja/line-1.wav', Ms: 2350 } },
    B: { Text: 'b', Responses: [{ Text: 'r' }] },
    B_r1: { Text: 'impostor' },
  });
  assert.equal(graph.find('A').close, false);
  assert.deepEqual(graph.find('A').voice, { clip: 'voice/ja/line-1.wav', ms: 2350 });
  assert.equal(graph.find('B_r1').kind, 'line', 'lines are named first');
  assert.equal(graph.vertex(graph.find('B').outputs[0]).kind, 'response');
  assert.ok(graph.problems.some((p) => p.includes('"B_r1": the name is taken')));
});

test('content that is not a JSON object is a ContentError naming the conversation', () => {
  assert.throws(() => buildGraph('{nope', 'Pim'), (e) => e instanceof ContentError && /conversation "Pim": the content is not JSON/.test(e.message));
  assert.throws(() => buildGraph('[]', 'Pim'), /must be an object of named nodes, found an array/);
});

test('names sort in UTF-8 byte order, as the server sorts them', () => {
  // U+FF5E sorts before U+1F600 in UTF-8 (and code points) but after it in UTF-16.
  assert.ok('\uff5e' > '\u{1f600}');
  assert.equal(compareUtf8('\uff5e', '\u{1f600}'), -1);
  assert.equal(compareUtf8('a', 'ab'), -1);
  assert.equal(compareUtf8('b', 'ab'), 1);
  assert.equal(compareUtf8('x', 'x'), 0);
});

test('Shared and Choice are read as rules, never as nodes', () => {
  const content = {
    FirstNode: 'A',
    Shared: { Mode: 'Majority', TimeLimit: 20 },
    A: { Text: 'a', Choice: { Mode: 'All' }, Responses: [{ Text: 'x', NextNode: 'B' }, { Text: 'y' }] },
    B: { Text: 'b', Responses: [{ Text: 'z' }] },
  };
  const graph = buildGraph(content, 'Shared');
  assert.deepEqual(graph.problems, []);
  assert.equal(graph.find('Shared'), undefined, 'Shared is no node');
  assert.deepEqual(graph.shared, { Mode: 'Majority', TimeLimit: 20 });
  assert.deepEqual(graph.choiceRule('A'), { Mode: 'All' });
  assert.deepEqual(graph.choiceRule('B'), { Mode: 'Majority', TimeLimit: 20, Tie: 'Leader' });
  assert.equal(graph.lineOf('A_r2')?.name, 'A');
  assert.equal(graph.lineOf('A'), undefined);
  assert.deepEqual(graph.responsesOf('A').map((r) => r.name), ['A_r1', 'A_r2']);
  // Alone, nothing is shared.
  assert.equal(buildGraph({ FirstNode: 'A', A: { Text: 'a' } }).choiceRule('A'), null);
  // A rule that cannot be read is a problem, as any other field.
  const bad = buildGraph({ FirstNode: 'A', Shared: { Mode: 'Vote', Extra: 1 }, A: { Text: 'a', Choice: { TimeLimit: 0 }, Responses: [{ Text: 'x' }] } });
  assert.equal(bad.problems.length, 4, bad.problems.join('\n')); // the three, and FirstNode naming the node left out
  assert.deepEqual(bad.shared, {}, 'still shared, with the defaults');
  assert.equal(bad.find('A'), undefined, 'a node whose Choice cannot be read is left out');
});
