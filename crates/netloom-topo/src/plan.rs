//! Time-varying links in the file: a link's `schedule` or `markov` table resolved into a
//! `netloom_link::Variation` over states, each state a full configuration of the link's pipes.

use crate::data::DataFiles;
use crate::doc::{DwellSpec, LinkEntry, MarkovSpec, ScheduleSpec};
use crate::error::{ErrorKind, Issue, Seg, Subject};
use crate::layer::{finish, parse_layer};
use crate::patch::LinkPatch;
use crate::schema::did_you_mean;
use crate::units;
use netloom_link::empirical::{Empirical, DEFAULT_SAMPLES, PPB};
use netloom_link::{Markov, MarkovState, PipeConfig, Schedule, Variation};
use netloom_time::Duration;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A plan and each state's (a→b, b→a) configurations.
pub(crate) type Resolved = (Arc<Variation>, Vec<(PipeConfig, PipeConfig)>);

/// Where problems of one link's plan are recorded.
struct Context<'a> {
    issues: &'a mut Vec<Issue>,
    files: &'a mut DataFiles,
    path: &'a [Seg],
    subject: &'a Subject,
    /// The link's fully layered directions, which every state starts from.
    bases: [&'a LinkPatch; 2],
}

/// The link's plan, if it has one and it is valid (problems are recorded in `issues`).
pub(crate) fn resolve_plan(
    link: &LinkEntry,
    bases: [&LinkPatch; 2],
    files: &mut DataFiles,
    issues: &mut Vec<Issue>,
    path: &[Seg],
    subject: &Subject,
) -> Option<Resolved> {
    let mut cx = Context {
        issues,
        files,
        path,
        subject,
        bases,
    };
    match (&link.schedule, &link.markov) {
        (None, None) => None,
        (Some(_), Some(_)) => {
            cx.bad(
                &[k("markov")],
                "a link changes by a schedule or by a markov graph, not both; remove one".into(),
            );
            None
        }
        (Some(s), None) => cx.schedule(s),
        (None, Some(m)) => cx.markov(m),
    }
}

fn k(key: &str) -> Seg {
    Seg::Key(key.to_string())
}

impl Context<'_> {
    fn bad(&mut self, segs: &[Seg], message: String) {
        let mut path = self.path.to_vec();
        path.extend(segs.iter().cloned());
        self.issues.push(Issue {
            kind: ErrorKind::BadValue,
            path,
            subject: self.subject.clone(),
            message,
        });
    }

    /// The parameters a state sets, parsed at `segs`.
    fn layer(&mut self, segs: &[Seg], set: &crate::doc::LinkParams, prefix: &str) -> LinkPatch {
        let mut path = self.path.to_vec();
        path.extend(segs.iter().cloned());
        parse_layer(
            self.issues,
            self.files,
            set,
            path,
            self.subject.clone(),
            prefix,
        )
    }

    /// Both pipes' configurations with `over` on top of the link's own; problems at `segs`,
    /// introduced by `what` ("in state \"bad\"").
    fn configs(
        &mut self,
        over: &LinkPatch,
        segs: &[Seg],
        what: &str,
    ) -> Option<(PipeConfig, PipeConfig)> {
        // Data files are loaded once per pipe; states change only the numbers.
        if let Some(key) = over.data_key() {
            self.bad(
                segs,
                format!("{what}: {key} cannot change over time; set it on the link itself"),
            );
            return None;
        }
        let ab = finish(&self.bases[0].under(over), None);
        let ba = finish(&self.bases[1].under(over), None);
        match (ab, ba) {
            (Ok((ab, _)), Ok((ba, _))) => Some((ab, ba)),
            (ab, ba) => {
                let problems = ab.err().or(ba.err()).unwrap_or_default();
                for (_, message) in problems {
                    self.bad(segs, format!("{what}: {message}"));
                }
                None
            }
        }
    }

    fn duration(&mut self, segs: &[Seg], name: &str, text: &str) -> Option<Duration> {
        match units::parse_duration(text) {
            Ok(d) => Some(d),
            Err(e) => {
                self.bad(segs, format!("{name} {e}"));
                None
            }
        }
    }

    fn schedule(&mut self, s: &ScheduleSpec) -> Option<Resolved> {
        let before = self.issues.len();
        let every = s.every.as_deref().and_then(|t| {
            let d = self.duration(&[k("schedule"), k("every")], "schedule.every", t)?;
            if d == Duration::ZERO {
                self.bad(
                    &[k("schedule"), k("every")],
                    "schedule.every must be above 0".into(),
                );
            }
            Some(d)
        });
        // Each event as (from, until, layer): `at` events last until the end.
        let mut events = Vec::new();
        for (i, e) in s.events.iter().enumerate() {
            let at = |key: &str| vec![k("schedule"), k("events"), Seg::Index(i), k(key)];
            let name = |key: &str| format!("schedule.events[{i}].{key}");
            let mut time = |key: &str, text: &Option<String>| {
                text.as_deref()
                    .and_then(|t| self.duration(&at(key), &name(key), t))
            };
            let (start, stop) = match (time("at", &e.at), time("from", &e.from), time("to", &e.to))
            {
                (Some(t), None, None) if e.from.is_none() && e.to.is_none() => (t, None),
                (None, Some(from), Some(to)) if e.at.is_none() => {
                    if to <= from {
                        self.bad(&at("to"), format!("{} must be after from", name("to")));
                    }
                    (from, Some(to))
                }
                _ => {
                    if self.issues.len() == before {
                        self.bad(
                            &[k("schedule"), k("events"), Seg::Index(i)],
                            format!(
                                "schedule event {} needs either at = \"10s\" or both from = \"20s\" and to = \"25s\"",
                                i + 1
                            ),
                        );
                    }
                    continue;
                }
            };
            if let Some(every) = every {
                if start >= every || stop.is_some_and(|t| t > every) {
                    self.bad(
                        &at(if stop.is_some_and(|t| t > every) {
                            "to"
                        } else {
                            "from"
                        }),
                        format!(
                            "schedule event {} is not within the period every = {every}",
                            i + 1
                        ),
                    );
                }
            }
            let layer = self.layer(&at("set"), &e.set, &format!("{}.", name("set")));
            events.push((start, stop, layer));
        }
        if self.issues.len() > before {
            return None;
        }
        // A state begins at every instant where some event starts or stops.
        let mut times: BTreeSet<Duration> = BTreeSet::from([Duration::ZERO]);
        for (start, stop, _) in &events {
            times.insert(*start);
            times.extend(*stop);
        }
        if let Some(every) = every {
            times.retain(|&t| t < every);
        }
        // Checked before any state is built: a schedule too fine or too long is refused at the
        // cost of its times alone.
        let steps = times
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i as u32))
            .collect();
        let schedule = match Schedule::new(steps, every) {
            Ok(s) => s,
            Err(e) => {
                self.bad(&[k("schedule")], format!("schedule: {e}"));
                return None;
            }
        };
        // The state at t is the `at` events up to t in time order (file order for equal times),
        // then the windows open at t in file order. One sweep over the times keeps it linear:
        // the `at` events fold into a running patch, the windows open and close as t passes.
        let (mut ats, windows): (Vec<_>, Vec<_>) = events
            .iter()
            .enumerate()
            .partition(|(_, (_, stop, _))| stop.is_none());
        ats.sort_by_key(|(_, (start, _, _))| *start);
        let mut opens: Vec<_> = windows
            .iter()
            .map(|&(i, (start, _, _))| (*start, i))
            .collect();
        let mut closes: Vec<_> = windows
            .iter()
            .filter_map(|&(i, (_, stop, _))| stop.map(|stop| (stop, i)))
            .collect();
        opens.sort_unstable();
        closes.sort_unstable();
        let (mut ats, mut opens, mut closes) = (
            ats.into_iter().peekable(),
            opens.into_iter().peekable(),
            closes.into_iter().peekable(),
        );
        let mut at_state = LinkPatch::default();
        let mut open = BTreeSet::new();
        let mut states = Vec::new();
        for &t in &times {
            while let Some((_, (_, _, layer))) = ats.next_if(|(_, (start, _, _))| *start <= t) {
                at_state = at_state.under(layer);
            }
            while let Some((_, i)) = opens.next_if(|&(start, _)| start <= t) {
                open.insert(i);
            }
            while let Some((_, i)) = closes.next_if(|&(stop, _)| stop <= t) {
                open.remove(&i);
            }
            let over = open
                .iter()
                .fold(at_state.clone(), |acc, &i| acc.under(&events[i].2));
            states.push(self.configs(&over, &[k("schedule")], &format!("schedule at {t}"))?);
        }
        Some((Arc::new(Variation::Schedule(schedule)), states))
    }

    fn markov(&mut self, m: &MarkovSpec) -> Option<Resolved> {
        let before = self.issues.len();
        let names: Vec<&str> = m.states.keys().map(String::as_str).collect();
        let index = |name: &str| names.iter().position(|&n| n == name).map(|i| i as u32);
        let start = index(&m.start);
        if start.is_none() {
            self.bad(
                &[k("markov"), k("start")],
                format!(
                    "markov.start \"{}\" is not a state{}; states: {}",
                    m.start,
                    did_you_mean(&m.start, &names),
                    names.join(", ")
                ),
            );
        }
        let mut states = Vec::new();
        let mut configs = Vec::new();
        for (name, spec) in &m.states {
            let at = |more: &[Seg]| {
                let mut p = vec![k("markov"), k("states"), k(name)];
                p.extend(more.iter().cloned());
                p
            };
            let dwell = self.dwell(&at(&[k("dwell")]), name, &spec.dwell);
            let mut next = Vec::new();
            for (to, p) in &spec.next {
                let segs = at(&[k("next"), k(to)]);
                let p = match units::parse_fraction(p) {
                    Ok(p) => p,
                    Err(e) => {
                        self.bad(&segs, format!("markov.states.{name}.next.{to} {e}"));
                        continue;
                    }
                };
                match index(to) {
                    Some(i) => next.push((i, p)),
                    None => self.bad(
                        &segs,
                        format!(
                            "state \"{name}\" goes to \"{to}\", which is not a state{}; states: {}",
                            did_you_mean(to, &names),
                            names.join(", ")
                        ),
                    ),
                }
            }
            let layer = self.layer(
                &at(&[k("set")]),
                &spec.set,
                &format!("markov.states.{name}.set."),
            );
            if let Some(c) = self.configs(&layer, &at(&[k("set")]), &format!("in state \"{name}\""))
            {
                configs.push(c);
            }
            if let Some(dwell) = dwell {
                states.push(MarkovState { dwell, next });
            }
        }
        if self.issues.len() > before {
            return None;
        }
        match Markov::new(states, start?) {
            Ok(markov) => Some((Arc::new(Variation::Markov(markov)), configs)),
            Err(e) => {
                // The graph's own checks number states; the file names them.
                let name = |i: u32| {
                    names
                        .get(i as usize)
                        .map_or_else(|| format!("{i}"), |n| format!("\"{n}\""))
                };
                let message = e.describe(name);
                self.bad(&[k("markov")], format!("markov: {message}"));
                None
            }
        }
    }

    /// A state's dwell time distribution, in nanoseconds.
    fn dwell(&mut self, segs: &[Seg], state: &str, spec: &DwellSpec) -> Option<Empirical> {
        let name = format!("markov.states.{state}.dwell");
        let empirical = match spec {
            DwellSpec::Fixed(text) => {
                Empirical::constant(self.duration(segs, &name, text)?.as_nanos())
            }
            DwellSpec::Points(points) => {
                let mut parsed = Vec::new();
                for (i, (p, d)) in points.iter().enumerate() {
                    let mut at = segs.to_vec();
                    at.push(Seg::Index(i));
                    let p = match units::parse_fraction(p) {
                        Ok(p) => p,
                        Err(e) => {
                            self.bad(&at, format!("{name}[{i}] {e}"));
                            return None;
                        }
                    };
                    let d = self.duration(&at, &format!("{name}[{i}]"), d)?;
                    parsed.push(((p * PPB as f64).round() as u64, d.as_nanos()));
                }
                match Empirical::from_points(&parsed, DEFAULT_SAMPLES) {
                    Ok(e) => e,
                    Err(e) => {
                        self.bad(segs, format!("{name}: {e}"));
                        return None;
                    }
                }
            }
        };
        if empirical.samples().contains(&0) {
            self.bad(
                segs,
                format!("{name} includes 0; a state must last some time, like \"1s\""),
            );
            return None;
        }
        Some(empirical)
    }
}
