//! The link parameters' part of the schema: a parameter table (`[defaults]`, a class, a link,
//! `a_to_b`) with its queue, loss model, RED, Markov states and schedule, each checked as the
//! rest of the file is (`Reader`).

use super::*;

impl Reader {
    pub(super) fn queue(&mut self, map: &Map<String, Value>, at: &At) -> Option<QueueSpec> {
        match Self::get(map, "queue")? {
            Value::Number(n) if n.is_i64() => n.as_i64().map(QueueSpec::Packets),
            Value::String(s) => Some(QueueSpec::Size(s.clone())),
            v => {
                self.wrong(
                    at,
                    "queue",
                    "a whole number of packets like 100 or a size like \"64KB\"",
                    v,
                );
                None
            }
        }
    }

    pub(super) fn loss(&mut self, map: &Map<String, Value>, at: &At) -> Option<LossSpec> {
        let v = Self::get(map, "loss")?;
        if !v.is_object() {
            return self.fraction(map, "loss", at).map(LossSpec::Simple);
        }
        let at = at.key("loss");
        let m = self.table(v, &at, "loss", GE_KEYS)?;
        let before = self.issues.len();
        let model = self.string(m, "model", &at);
        let p = self.fraction(m, "p", &at);
        let r = self.fraction(m, "r", &at);
        let bad_loss = self.fraction(m, "bad_loss", &at);
        let good_loss = self.fraction(m, "good_loss", &at);
        for (key, present) in [
            ("model", model.is_some()),
            ("p", p.is_some()),
            ("r", r.is_some()),
        ] {
            if !present && !m.contains_key(key) {
                self.push(
                    ErrorKind::Missing,
                    &at,
                    format!(
                        "a loss table needs {key}: loss = {{ model = \"gilbert-elliott\", p = \"1%\", r = \"30%\" }}"
                    ),
                );
            }
        }
        if self.issues.len() > before {
            return None;
        }
        Some(LossSpec::GilbertElliott(GilbertElliottSpec {
            model: model?,
            p: p?,
            r: r?,
            bad_loss,
            good_loss,
        }))
    }

    pub(super) fn red(&mut self, map: &Map<String, Value>, at: &At) -> Option<RedSpec> {
        let v = Self::get(map, "red")?;
        let at = at.key("red");
        let m = self.table(v, &at, "red", RED_KEYS)?;
        Some(RedSpec {
            min_th: self.number(m, "min_th", &at),
            max_th: self.number(m, "max_th", &at),
            max_p: self.fraction(m, "max_p", &at),
            weight: self.number(m, "weight", &at),
        })
    }

    /// The parameter keys of a table whose keys were already checked.
    pub(super) fn params(&mut self, map: &Map<String, Value>, at: &At) -> LinkParams {
        LinkParams {
            bw: self.with_unit(map, "bw", at),
            delay: self.with_unit(map, "delay", at),
            jitter: self.with_unit(map, "jitter", at),
            reorder: self.boolean(map, "reorder", at),
            loss: self.loss(map, at),
            queue: self.queue(map, at),
            aqm: self.string(map, "aqm", at),
            red: self.red(map, at),
            codel_target: self.with_unit(map, "codel_target", at),
            codel_interval: self.with_unit(map, "codel_interval", at),
            fq_quantum: self.integer(map, "fq_quantum", at),
            fq_flows: self.integer(map, "fq_flows", at),
            ecn: self.boolean(map, "ecn", at),
            duplicate: self.fraction(map, "duplicate", at),
            ooo_rate: self.fraction(map, "ooo_rate", at),
            ooo_delay: self.with_unit(map, "ooo_delay", at),
            up: self.boolean(map, "up", at),
            mtu: self.integer(map, "mtu", at),
            wireless: self.string(map, "wireless", at),
            snr: self.with_unit(map, "snr", at),
            netload: self.fraction(map, "netload", at),
            collision: self.fraction(map, "collision", at),
            retry_limit: self.integer(map, "retry_limit", at),
            mac_profile: self.string(map, "mac_profile", at),
            trace: self.string(map, "trace", at),
        }
    }

    /// `schedule = { every = "60s", events = [{ at = "10s", set = { ... } }, ...] }`
    pub(super) fn schedule(&mut self, v: &Value, at: &At) -> Option<ScheduleSpec> {
        let m = self.table(v, at, "schedule", SCHEDULE_KEYS)?;
        let every = self.with_unit(m, "every", at);
        let example = "events = [{ at = \"10s\", set = { delay = \"50ms\" } }]";
        let items = match self.required(m, "events", at, example)? {
            Value::Array(items) => items,
            other => {
                self.wrong(at, "events", "an array of tables", other);
                return None;
            }
        };
        let events_at = at.key("events");
        let events = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let at = events_at.index(i);
                let e = self.table(item, &at, "a schedule event", EVENT_KEYS)?;
                let example = "an event sets parameters: set = { delay = \"50ms\" }";
                let set = self.required(e, "set", &at, example)?;
                Some(ScheduleEvent {
                    at: self.with_unit(e, "at", &at),
                    from: self.with_unit(e, "from", &at),
                    to: self.with_unit(e, "to", &at),
                    set: self.param_table(set, &at.key("set"), "set")?,
                })
            })
            .collect();
        Some(ScheduleSpec { every, events })
    }

    /// `markov = { start = "good", states = { good = { dwell = "5s", next = { bad = 1 }, set = { ... } } } }`
    pub(super) fn markov(&mut self, v: &Value, at: &At) -> Option<MarkovSpec> {
        let m = self.table(v, at, "markov", MARKOV_KEYS)?;
        let start = self.string(m, "start", at);
        self.required(m, "start", at, "start = \"good\" names the first state");
        let example = "states = { good = { dwell = \"5s\", next = { bad = 1 } } }";
        let states_value = self.required(m, "states", at, example)?;
        let states_at = at.key("states");
        let Value::Object(table) = states_value else {
            self.wrong(at, "states", "a table of named states", states_value);
            return None;
        };
        let mut states = std::collections::BTreeMap::new();
        for (name, state) in table {
            let at = states_at.key(name);
            let Some(s) = self.table(state, &at, "a Markov state", STATE_KEYS) else {
                continue;
            };
            let dwell = self.dwell(s, &at);
            let next = match Self::get(s, "next") {
                None => Default::default(),
                Some(Value::Object(arcs)) => arcs
                    .keys()
                    .filter_map(|k| Some((k.clone(), self.fraction(arcs, k, &at.key("next"))?)))
                    .collect(),
                Some(other) => {
                    self.wrong(
                        &at,
                        "next",
                        "a table of state names and probabilities",
                        other,
                    );
                    Default::default()
                }
            };
            let set = match Self::get(s, "set") {
                None => LinkParams::default(),
                Some(v) => self
                    .param_table(v, &at.key("set"), "set")
                    .unwrap_or_default(),
            };
            if let Some(dwell) = dwell {
                states.insert(name.clone(), MarkovStateSpec { dwell, next, set });
            }
        }
        Some(MarkovSpec {
            start: start?,
            states,
        })
    }

    /// A dwell time: "5s", or CDF points [[probability, "duration"], ...].
    pub(super) fn dwell(&mut self, s: &Map<String, Value>, at: &At) -> Option<DwellSpec> {
        let expected = "a duration like \"5s\" or CDF points like [[0, \"1s\"], [1, \"9s\"]]";
        match self.required(s, "dwell", at, &format!("write {expected}"))? {
            Value::String(d) => Some(DwellSpec::Fixed(d.clone())),
            Value::Array(points) => {
                let at = at.key("dwell");
                let mut out = Vec::new();
                for (i, point) in points.iter().enumerate() {
                    let pair = match point {
                        Value::Array(pair) if pair.len() == 2 => pair,
                        other => {
                            self.push(
                                ErrorKind::WrongType,
                                &at.index(i),
                                format!(
                                    "dwell point {} must be [probability, \"duration\"], not {}",
                                    i + 1,
                                    describe(other)
                                ),
                            );
                            return None;
                        }
                    };
                    let mut two = Map::new();
                    two.insert("p".into(), pair[0].clone());
                    two.insert("d".into(), pair[1].clone());
                    let p = self.fraction(&two, "p", &at.index(i));
                    let d = self.with_unit(&two, "d", &at.index(i));
                    out.push((p?, d?));
                }
                Some(DwellSpec::Points(out))
            }
            other => {
                self.wrong(at, "dwell", expected, other);
                None
            }
        }
    }

    /// A parameter table on its own (`[defaults]`, a class, `a_to_b`).
    pub(super) fn param_table(&mut self, v: &Value, at: &At, what: &str) -> Option<LinkParams> {
        let map = self.table(v, at, what, PARAM_KEYS)?;
        Some(self.params(map, at))
    }
}
