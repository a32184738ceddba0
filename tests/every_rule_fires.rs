//! Issue #3 acceptance: every ported rule fires at least once. For each rule of
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
        // `tinygrad/<dir>/<file>:<line>`, tinygrad's TRACK_MATCH_STATS records `<file>:<line>`)
        let port_lines: BTreeSet<&str> = out
            .trace
            .iter()
            .map(|s| s.source.rsplit('/').next().unwrap_or(s.source))
            .collect();
        assert_eq!(
            port_lines, c.fired,
            "{}: the port fired other tinygrad patterns than tinygrad",
            c.rule
        );
        assert!(!c.tinygrad.starts_with("RAISES"), "{}", c.rule);
        assert_eq!(
            write_graph(&g, &[out.root], &["root"]),
            c.tinygrad,
            "{}: result differs from tinygrad's",
            c.rule
        );
    }
}
