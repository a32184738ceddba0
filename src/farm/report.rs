//! The morning report (`uopfuzz farm report DIR`): `DIR/report.md` and a self-contained
//! `DIR/report.html` (plots inline as SVG, drawn with plotters): findings new since the last
//! report first, then signatures and bugs over time, execs/s over time, rule coverage as a
//! heatmap (rule set × dtype), health counters, and every filed finding with a link to its
//! repro file. `DIR/reports/last.json` remembers when the last report was made.
use super::store::{self, FarmError, Filed, Layout, StatLine, State};
use super::triage::{self, blame_line, fmt_time, standing};
use plotters::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

pub const DTYPES: [&str; 6] = ["weakint", "int", "uint", "float", "bool", "kernel"];

/// What a report run wrote and counted.
#[derive(Debug)]
pub struct Written {
    pub markdown: std::path::PathBuf,
    pub html: std::path::PathBuf,
    pub new: usize,
    pub total: usize,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One named, coloured line of (hours, value) points.
type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// Lines as one SVG chart; `resumed`: hours at which the farm was started again (a grey
/// vertical line each); `counts`: the y values are whole numbers (labelled without decimals).
fn line_chart(
    title: &str,
    y_label: &str,
    series: &[Series],
    resumed: &[f64],
    counts: bool,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 300)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let xmax = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.0))
            .fold(0.0f64, f64::max)
            .max(1e-3);
        let ymax = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.1))
            .fold(0.0f64, f64::max)
            .max(1.0)
            * 1.1;
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax);
        if let Ok(mut chart) = chart {
            let whole = |v: &f64| format!("{v:.0}");
            let mut mesh = chart.configure_mesh();
            mesh.x_desc("farm hours").y_desc(y_label);
            if counts {
                // at most one label per unit, so no two read the same
                mesh.y_labels((ymax as usize + 1).clamp(2, 10));
            }
            if counts || ymax >= 10.0 {
                mesh.y_label_formatter(&whole);
            }
            let _ = mesh.draw();
            let grey = RGBColor(150, 150, 150);
            for (i, x) in resumed.iter().enumerate() {
                if let Ok(s) = chart.draw_series(LineSeries::new(
                    [(*x, 0.0), (*x, ymax)],
                    grey.stroke_width(1),
                )) && i == 0
                {
                    s.label("farm restarted").legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], grey.stroke_width(1))
                    });
                }
            }
            for (name, color, pts) in series {
                let c = *color;
                if let Ok(s) =
                    chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                {
                    s.label(*name).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                    });
                }
            }
            let _ = chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .position(SeriesLabelPosition::UpperLeft)
                .draw();
        }
        let _ = root.present();
    }
    svg
}

/// Share of each rule set's rules fired per dtype family: rows, columns and values in 0..=1.
pub fn coverage_grid(st: &State) -> (Vec<String>, Vec<Vec<(usize, usize)>>) {
    let mut sets: Vec<String> = vec![];
    let mut grid = vec![];
    for set in crate::rewrite::rules::SET_NAMES {
        let Some(rs) = crate::rewrite::rules::by_name(set) else {
            continue;
        };
        let names: BTreeSet<&str> = rs.rules.iter().map(|r| r.name).collect();
        let row: Vec<(usize, usize)> = DTYPES
            .iter()
            .map(|dt| {
                let hit = st
                    .coverage
                    .keys()
                    .filter_map(|k| k.split_once('\t'))
                    .filter(|(r, d)| d == dt && names.contains(r))
                    .count();
                (hit, names.len())
            })
            .collect();
        sets.push(set.to_string());
        grid.push(row);
    }
    (sets, grid)
}

fn heatmap(st: &State) -> String {
    let (sets, grid) = coverage_grid(st);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 80 + 50 * sets.len() as u32))
            .into_drawing_area();
        let _ = root.fill(&WHITE);
        let _ = root.draw(&Text::new(
            "rule coverage: share of each rule set's rules fired, by dtype of the graph",
            (10, 8),
            ("sans-serif", 18),
        ));
        let (x0, y0, cw, ch) = (150i32, 60i32, 120i32, 50i32);
        for (j, dt) in DTYPES.iter().enumerate() {
            let _ = root.draw(&Text::new(
                *dt,
                (x0 + j as i32 * cw + 30, y0 - 22),
                ("sans-serif", 15),
            ));
        }
        for (i, set) in sets.iter().enumerate() {
            let y = y0 + i as i32 * ch;
            let _ = root.draw(&Text::new(set.as_str(), (10, y + 18), ("sans-serif", 15)));
            for (j, (hit, total)) in grid[i].iter().enumerate() {
                let v = *hit as f64 / (*total).max(1) as f64;
                // white (none) to dark green (all)
                let c = RGBColor(
                    (255.0 * (1.0 - 0.85 * v)) as u8,
                    (255.0 * (1.0 - 0.45 * v)) as u8,
                    (255.0 * (1.0 - 0.85 * v)) as u8,
                );
                let x = x0 + j as i32 * cw;
                let _ = root.draw(&Rectangle::new(
                    [(x, y), (x + cw - 4, y + ch - 4)],
                    c.filled(),
                ));
                let _ = root.draw(&Text::new(
                    format!("{hit}/{total}"),
                    (x + 35, y + 16),
                    ("sans-serif", 14)
                        .into_font()
                        .color(if v > 0.6 { &WHITE } else { &BLACK }),
                ));
            }
        }
        let _ = root.present();
    }
    svg
}

/// Whether the signature is in the checked-in known-findings list.
fn known(f: &Filed) -> &'static str {
    static KNOWN: std::sync::OnceLock<Vec<crate::oracle::verdict::Signature>> =
        std::sync::OnceLock::new();
    let k = KNOWN.get_or_init(|| {
        crate::oracle::fuzz::builtin_known()
            .into_iter()
            .map(|x| x.0)
            .collect()
    });
    if k.contains(&f.finding.signature) {
        " (known)"
    } else {
        ""
    }
}

fn row_md(f: &Filed) -> String {
    let (blamed, min) = blame_line(f);
    format!(
        "| {} | `{}`{} | {} | {} | {} | [{}](findings/{}/{}) |\n",
        standing(f),
        f.finding.signature.to_string().replace('|', "\\|"),
        known(f),
        blamed,
        min,
        fmt_time(f.meta.first_seen),
        repro_name(f),
        f.name,
        repro_name(f)
    )
}

fn repro_name(f: &Filed) -> &'static str {
    if f.dir.join("repro.py").exists() {
        "repro.py"
    } else {
        "original.py"
    }
}

fn row_html(f: &Filed) -> String {
    let (blamed, min) = blame_line(f);
    format!(
        "<tr class=\"{}\"><td>{}</td><td><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{}</td><td><a href=\"findings/{}/{}\">{}</a></td></tr>\n",
        esc(&standing(f)),
        esc(&standing(f)),
        esc(&f.finding.signature.to_string()),
        known(f),
        esc(&blamed),
        esc(&min.replace('`', "")),
        esc(&fmt_time(f.meta.first_seen)),
        esc(&f.name),
        repro_name(f),
        repro_name(f)
    )
}

fn rank(f: &Filed) -> u8 {
    match standing(f).as_str() {
        "bug" => 0,
        "harness-crash" => 1,
        "untriaged" => 2,
        _ => 3,
    }
}

/// Writes the report; `mark`: remember this report's time, so the next one lists only what is
/// new after it.
/// The bug list of the farm's findings: `uopfuzz bugs` without the Python checks (reusing the
/// cache a `uopfuzz bugs` run left there; nothing is written among the findings).
fn bug_list(l: &Layout) -> crate::repro::bugs::Report {
    use crate::repro::bugs::{Cache, Opts, build, read_counts};
    let dir = l.findings();
    let (found, _) = crate::repro::report::collect(&dir);
    if found.is_empty() {
        return crate::repro::bugs::Report::default();
    }
    let mut cache = Cache::load(&dir);
    build(found, &read_counts(&dir), &Opts::default(), &mut cache)
}

pub fn write(l: &Layout, mark: bool) -> Result<Written, FarmError> {
    let st = State::load(l)?.ok_or_else(|| FarmError::NoFarm {
        dir: l.root.clone(),
    })?;
    let stats: Vec<StatLine> = store::read_jsonl(&l.stats());
    let last_path = l.reports().join("last.json");
    let last_t = std::fs::read_to_string(&last_path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["t"].as_f64())
        .unwrap_or(0.0);
    let mut all = triage::load_all(l);
    all.sort_by_key(rank);
    let new_all: Vec<&Filed> = all.iter().filter(|f| f.meta.first_seen > last_t).collect();
    // bugs and harness crashes lead; the other new findings (untriaged, not reproduced, ...)
    // are counted here and listed with everything else at the end
    let new: Vec<&Filed> = new_all.iter().copied().filter(|f| rank(f) <= 1).collect();
    let new_other = new_all.len() - new.len();
    let t0 = stats.first().map(|s| s.t - s.elapsed).unwrap_or(0.0);
    let hours = |s: &StatLine| s.elapsed / 3600.0;
    let _ = t0;
    let sig_pts: Vec<(f64, f64)> = stats
        .iter()
        .map(|s| (hours(s), s.signatures as f64))
        .collect();
    let bug_pts: Vec<(f64, f64)> = stats.iter().map(|s| (hours(s), s.bugs as f64)).collect();
    let rate_pts: Vec<(f64, f64)> = stats.iter().map(|s| (hours(s), s.execs_per_sec)).collect();
    let resumed: Vec<f64> = st.resumes.iter().map(|e| e / 3600.0).collect();
    let svg_bugs = line_chart(
        "signatures and bugs over time",
        "count",
        &[
            ("signatures", RGBColor(31, 119, 180), sig_pts),
            ("bugs (triage-confirmed)", RGBColor(214, 39, 40), bug_pts),
        ],
        &resumed,
        true,
    );
    let svg_rate = line_chart(
        "throughput",
        "execs/s",
        &[("execs/s", RGBColor(44, 160, 44), rate_pts)],
        &resumed,
        false,
    );
    let svg_heat = heatmap(&st);
    let count = |c: &str| st.by_class.get(c).copied().unwrap_or(0);
    let health: Vec<(&str, u64, &str)> = vec![
        (
            "unknown verdicts",
            count("unknown"),
            "detections the oracle could not classify",
        ),
        (
            "triage unknown",
            st.triage_unknown,
            "findings Z3 could not decide",
        ),
        (
            "worker hangs",
            st.hangs,
            "watchdog kills (each filed as harness-crash)",
        ),
        (
            "triage timeouts",
            st.triage_timeouts,
            "triage runs stopped at their deadline",
        ),
        (
            "not-idempotent",
            count("not-idempotent"),
            "detections (all occurrences)",
        ),
        (
            "nontermination",
            count("nontermination"),
            "detections (all occurrences)",
        ),
        (
            "float-rounding",
            count("float-rounding"),
            "detections within rounding",
        ),
        (
            "harness crashes",
            st.harness_crashes,
            "worker panics, hangs and kills",
        ),
        ("worker restarts", st.restarts, ""),
    ];
    // the bug list is `uopfuzz bugs`'s, so the two never disagree
    let list = bug_list(l);
    let headline = format!(
        "{} execs in {:.1} farm hours ({:.0} execs/s over the run), {} signatures filed, {} bugs ({} signatures; `uopfuzz bugs {}`), {} by design, {} new since the last report{}",
        st.execs,
        st.elapsed / 3600.0,
        // the mean, not the last sample: that one is often taken while the farm shuts down
        if st.elapsed > 0.0 {
            st.execs as f64 / st.elapsed
        } else {
            0.0
        },
        all.len(),
        list.bugs.len(),
        list.signatures,
        l.findings().display(),
        list.by_design.len(),
        new_all.len(),
        if last_t > 0.0 {
            format!(" ({})", fmt_time(last_t))
        } else {
            String::new()
        }
    );
    // markdown
    let mut md = format!(
        "# uopfuzz farm report: {}\n\n{headline}\n\n",
        l.root.display()
    );
    let head = "| standing | signature | blamed (triage) | minimized | first seen | repro |\n|---|---|---|---|---|---|\n";
    let _ = write!(
        md,
        "## New bugs and harness crashes since the last report ({})\n\n",
        new.len()
    );
    if new.is_empty() {
        md.push_str("None.\n\n");
    } else {
        md.push_str(head);
        for f in &new {
            md.push_str(&row_md(f));
        }
        md.push('\n');
    }
    if new_other > 0 {
        let _ = write!(
            md,
            "and {new_other} other new findings (untriaged or not bugs), in the full list below.\n\n"
        );
    }
    for (name, svg) in [
        ("bugs-over-time.svg", &svg_bugs),
        ("execs-per-sec.svg", &svg_rate),
        ("coverage.svg", &svg_heat),
    ] {
        store::write_atomic(&l.reports().join(name), svg.as_bytes()).map_err(|e| {
            FarmError::Io {
                path: l.reports().join(name),
                source: e,
            }
        })?;
        let _ = write!(md, "![{name}](reports/{name})\n\n");
    }
    let (sets, grid) = coverage_grid(&st);
    md.push_str("## Rule coverage (rules fired / rules in the set)\n\n| rule set |");
    for d in DTYPES {
        let _ = write!(md, " {d} |");
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(DTYPES.len()));
    md.push('\n');
    for (i, s) in sets.iter().enumerate() {
        let _ = write!(md, "| {s} |");
        for (h, t) in &grid[i] {
            let _ = write!(md, " {h}/{t} |");
        }
        md.push('\n');
    }
    md.push_str("\n## Health\n\n| counter | value | what |\n|---|---|---|\n");
    for (k, v, w) in &health {
        let _ = writeln!(md, "| {k} | {v} | {w} |");
    }
    let _ = write!(md, "\n## All filed findings ({})\n\n{head}", all.len());
    for f in &all {
        md.push_str(&row_md(f));
    }
    // html
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>uopfuzz farm report</title><style>\
body{font-family:sans-serif;margin:20px;max-width:1150px}table{border-collapse:collapse;font-size:13px;margin-bottom:16px}\
td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}td:nth-child(5){white-space:nowrap}th{background:#eee}\
tr.bug td:first-child{background:#fbb;font-weight:bold}tr.harness-crash td:first-child{background:#fd8}\
tr.untriaged td:first-child{background:#ddd}code{font-size:12px}.plot{margin:8px 0}</style></head><body>\n",
    );
    let _ = writeln!(
        html,
        "<h1>uopfuzz farm report</h1><p><b>{}</b></p><p>{}</p>",
        esc(&l.root.display().to_string()),
        esc(&headline)
    );
    let thead = "<table><tr><th>standing</th><th>signature</th><th>blamed (triage)</th><th>minimized</th><th>first seen (UTC)</th><th>repro</th></tr>\n";
    let _ = writeln!(
        html,
        "<h2>New bugs and harness crashes since the last report ({})</h2>",
        new.len()
    );
    if new.is_empty() {
        html.push_str("<p>None.</p>\n");
    } else {
        html.push_str(thead);
        for f in &new {
            html.push_str(&row_html(f));
        }
        html.push_str("</table>\n");
    }
    if new_other > 0 {
        let _ = writeln!(
            html,
            "<p>and {new_other} other new findings (untriaged or not bugs), in the full list below.</p>"
        );
    }
    html.push_str("<h2>Over time</h2>\n");
    for svg in [&svg_bugs, &svg_rate] {
        let _ = writeln!(html, "<div class=\"plot\">{svg}</div>");
    }
    let _ = writeln!(
        html,
        "<h2>Rule coverage</h2><div class=\"plot\">{svg_heat}</div>"
    );
    html.push_str("<h2>Health</h2><table><tr><th>counter</th><th>value</th><th>what</th></tr>\n");
    for (k, v, w) in &health {
        let _ = writeln!(html, "<tr><td>{k}</td><td>{v}</td><td>{}</td></tr>", esc(w));
    }
    html.push_str("</table>\n");
    let by_class: BTreeMap<&String, &u64> = st.by_class.iter().collect();
    let _ = writeln!(
        html,
        "<p>Detections by class (all occurrences): {}</p>",
        esc(&format!("{by_class:?}"))
    );
    let _ = writeln!(html, "<h2>All filed findings ({})</h2>", all.len());
    html.push_str(thead);
    for f in &all {
        html.push_str(&row_html(f));
    }
    html.push_str("</table></body></html>\n");
    let markdown = l.root.join("report.md");
    let html_path = l.root.join("report.html");
    let io = |path: &std::path::PathBuf, source: std::io::Error| FarmError::Io {
        path: path.clone(),
        source,
    };
    store::write_atomic(&markdown, md.as_bytes()).map_err(|e| io(&markdown, e))?;
    store::write_atomic(&html_path, html.as_bytes()).map_err(|e| io(&html_path, e))?;
    if mark {
        store::write_atomic(
            &last_path,
            format!("{{\"t\": {}}}", store::unix_now()).as_bytes(),
        )
        .map_err(|e| io(&last_path, e))?;
    }
    Ok(Written {
        markdown,
        html: html_path,
        new: new_all.len(),
        total: all.len(),
    })
}
