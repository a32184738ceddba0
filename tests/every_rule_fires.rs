//! Every ported rule fires at least once. For each rule of
//! `rules::all_rules()`, pattern-directed generation (`generate::directed`) builds graphs whose root
//! matches the rule's pattern, over a fixed range of seeds, and each graph is rewritten with every
//! rule set that contains the rule, top-down and bottom-up; a rule counts as fired when it appears
//! in a rewrite trace (`engine::Outcome::trace`: it returned a node other than its input). The
//! rules generation does not reach (ops the generator does not build: STACK, RESHAPE, PERMUTE,
//! REDUCE, GROUP, AFTER, ...) are fired by the hand-built graphs of
//! `common/every_rule_fires_cases.txt`, written by `common/every_rule_fires_cases.py` with tinygrad
//! 0.14.0, which also records the tinygrad pattern lines that fired on each graph
//! (`TRACK_MATCH_STATS`). The test prints the rules that never fired and fails if any.
use std::collections::{BTreeMap, BTreeSet};
use uopfuzz::generate::GenConfig;
use uopfuzz::generate::directed::generate_for_pattern_seeded;
use uopfuzz::ir::Graph;
use uopfuzz::ir::text::{parse_graph, write_graph};
use uopfuzz::rewrite::engine::{Limits, Outcome, RuleSet, graph_rewrite};
use uopfuzz::rewrite::rules::{SET_NAMES, all_rules, by_name};

const CASES: &str = include_str!("common/every_rule_fires_cases.txt");
/// Seeds tried per rule (generation stops at the first graph that fires the rule).
const SEEDS: u64 = 200;

/// One hand-built case: the rule it targets, the rule set, the input text, tinygrad's result text
/// (or its `RAISES ...` line), and the tinygrad pattern lines that fired (`symbolic.py:75`).
struct Case {
    rule: &'static str,
    set: &'static str,
    input: &'static str,
    tinygrad: &'static str,
    fired: BTreeSet<&'static str>,
}

fn cases() -> Vec<Case> {
    CASES
        .split("== ")
        .skip(1)
        .map(|block| {
            let (head, rest) = block.split_once('\n').expect("a case header line");
            let (rule, set) = head.split_once(' ').expect("`rule set` in the header");
            let (input, rest) = rest.split_once("-- tinygrad\n").expect("a result section");
            let (tinygrad, fired) = rest.split_once("-- fired").expect("a fired line");
            Case {
                rule,
                set,
                input,
                tinygrad,
                fired: fired.split_whitespace().collect(),
            }
        })
        .collect()
}

fn rewrite(g: &mut Graph, root: uopfuzz::ir::UOp, rs: &RuleSet, bottom_up: bool) -> Outcome {
    let mut cache = Default::default();
    let limits = Limits {
        bottom_up,
        ..Limits::default()
    };
    graph_rewrite(g, &mut cache, root, rs, &limits)
}

/// Rewrites the parsed input of `c` with its rule set (top-down, as tinygrad's `graph_rewrite`).
fn run_case(c: &Case) -> (Graph, Outcome) {
    let p = parse_graph(c.input, c.rule).unwrap_or_else(|e| panic!("{}: {e}", c.rule));
    let rs = by_name(c.set).unwrap_or_else(|| panic!("{}: no rule set {}", c.rule, c.set));
    let mut g = p.graph;
    let out = rewrite(&mut g, p.roots[0].1, rs, false);
    (g, out)
}

#[test]
fn every_rule_fires() {
    let rules = all_rules();
    let cfg = GenConfig::default();
    // rules seen in a top-down / bottom-up trace of a generated graph, and of a hand-built one
    let (mut top_down, mut bottom_up, mut hand) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for r in &rules {
        let sets: Vec<&RuleSet> = SET_NAMES
            .iter()
            .filter_map(|s| by_name(s))
            .filter(|s| s.rules.iter().any(|x| x.name == r.name))
            .collect();
        for seed in 0..SEEDS {
            // a rule that fired bottom-up only keeps looking for a top-down graph
            if top_down.contains(r.name) {
                break;
            }
            let Some(case) = generate_for_pattern_seeded(seed, &r.pat, &cfg) else {
                continue;
            };
            for rs in &sets {
                for bu in [false, true] {
                    let mut g = case.graph.clone();
                    let out = rewrite(&mut g, case.root, rs, bu);
                    let seen = if bu { &mut bottom_up } else { &mut top_down };
                    seen.extend(out.trace.iter().map(|st| st.rule));
                }
            }
        }
    }
    for c in cases() {
        let (_, out) = run_case(&c);
        hand.extend(out.trace.iter().map(|st| st.rule));
    }
    let mut by_how: BTreeMap<&str, usize> = BTreeMap::new();
    let mut never = Vec::new();
    for r in &rules {
        let how = if top_down.contains(r.name) {
            "generated"
        } else if bottom_up.contains(r.name) {
            "generated, bottom-up only"
        } else if hand.contains(r.name) {
            "hand-built"
        } else {
            never.push(r.name);
            continue;
        };
        *by_how.entry(how).or_insert(0) += 1;
    }
    println!(
        "rules fired: {}/{} ({by_how:?})",
        rules.len() - never.len(),
        rules.len()
    );
    if !never.is_empty() {
        println!("rules never fired ({}):", never.len());
        for n in &never {
            println!("  {n}");
        }
    }
    assert!(
        never.is_empty(),
        "{} rules never fired: {never:?}",
        never.len()
    );
}

/// Each hand-built case fires its target rule in the port and reaches tinygrad's result.
#[test]
fn hand_built_cases_match_tinygrad() {
    let cases = cases();
    let mut other_patterns = Vec::new();
    assert_eq!(cases.len(), 20);
    for c in &cases {
        assert!(
            all_rules().iter().any(|r| r.name == c.rule),
            "{}: no such rule",
            c.rule
        );
        let (g, out) = run_case(c);
        let fired: Vec<&str> = out.trace.iter().map(|s| s.rule).collect();
        assert!(
            fired.contains(&c.rule),
            "{}: did not fire ({fired:?})",
            c.rule
        );
        // the same tinygrad patterns fired on both sides (the port cites each rule's line as
        // `tinygrad/<dir>/<file>:<line>`, tinygrad's TRACK_MATCH_STATS records `<file>:<line>`
        // of the pattern's first line)
        let port_lines: BTreeSet<&str> = out
            .trace
            .iter()
            .map(|s| s.source.rsplit('/').next().unwrap_or(s.source))
            .map(pattern_line)
            .collect();
        if port_lines != c.fired {
            other_patterns.push(format!(
                "{}: port {port_lines:?}, tinygrad {:?}",
                c.rule, c.fired
            ));
        }
        assert!(!c.tinygrad.starts_with("RAISES"), "{}", c.rule);
        assert_eq!(
            write_graph(&g, &[out.root], &["root"]),
            c.tinygrad,
            "{}: result differs from tinygrad's",
            c.rule
        );
    }
    assert!(
        other_patterns.is_empty(),
        "the port fired other tinygrad patterns than tinygrad:\n{}",
        other_patterns.join("\n")
    );
}

/// The tinygrad pattern line a port citation stands for, where the port cites something else:
/// the function a pattern calls (`fold_add_divmod_recombine` defined at symbolic.py:52, its
/// pattern at :120; reduce_mul_chain's helper at :381, its pattern at :470) or the second line
/// of a two-line pattern (its lambda), one below the line tinygrad's match stats record.
fn pattern_line(cited: &str) -> &str {
    match cited {
        "symbolic.py:52" => "symbolic.py:120",
        "symbolic.py:381" => "symbolic.py:470",
        "symbolic.py:95" => "symbolic.py:94",
        "symbolic.py:437" => "symbolic.py:436",
        "symbolic.py:444" => "symbolic.py:443",
        "movement.py:16" => "movement.py:15",
        "movement.py:19" => "movement.py:18",
        "movement.py:22" => "movement.py:21",
        "movement.py:25" => "movement.py:24",
        l => l,
    }
}
