//! Judges the three runs of the suite together against the one baseline.
//!
//! The suite judges each run on its own against `--expected-failures`, and counts a listed
//! scenario that passes as stale. One baseline for two revisions does not fit that rule: a
//! scenario that runs at both revisions may fail at only one of them (while the Pack speaks
//! only 2025-11-25, `tools_call` passes at 2025-11-25 and fails at 2026-07-28), so it must be
//! listed, and the 2025-11-25 run would call it stale. Across the runs the rules stay whole:
//!
//! - a scenario that fails in any run and is not listed fails the command;
//! - a listed scenario that passes in every run that has it is stale and fails the command;
//! - a listed scenario that no run has is a typo or a leftover and fails the command.

use super::suite_output::Outcome;

/// One run: its label and every scenario's outcome.
pub(super) struct Run {
    pub(super) label: String,
    pub(super) scenarios: Vec<(String, Outcome)>,
}

/// What is wrong with the runs, given the baseline; empty when the command passes.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Verdict {
    /// `(run label, scenario)` for each failure the baseline does not list.
    pub(super) unexpected: Vec<(String, String)>,
    /// Listed scenarios that passed in every run that has them.
    pub(super) stale: Vec<String>,
    /// Listed scenarios that no run has.
    pub(super) unknown: Vec<String>,
}

impl Verdict {
    pub(super) fn passed(&self) -> bool {
        self.unexpected.is_empty() && self.stale.is_empty() && self.unknown.is_empty()
    }
}

/// Judges `runs` against the `listed` scenarios.
pub(super) fn judge(listed: &[String], runs: &[Run]) -> Verdict {
    let mut verdict = Verdict::default();
    for run in runs {
        for (scenario, outcome) in &run.scenarios {
            if *outcome == Outcome::Failed && !listed.contains(scenario) {
                verdict
                    .unexpected
                    .push((run.label.clone(), scenario.clone()));
            }
        }
    }
    for scenario in listed {
        let outcomes: Vec<Outcome> = runs
            .iter()
            .flat_map(|run| &run.scenarios)
            .filter(|(name, outcome)| name == scenario && *outcome != Outcome::Skipped)
            .map(|(_, outcome)| *outcome)
            .collect();
        if outcomes.is_empty() {
            verdict.unknown.push(scenario.clone());
        } else if outcomes.iter().all(|outcome| *outcome == Outcome::Passed) {
            verdict.stale.push(scenario.clone());
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{Failed, Passed, Skipped};

    fn run(label: &str, scenarios: &[(&str, Outcome)]) -> Run {
        Run {
            label: label.to_owned(),
            scenarios: scenarios
                .iter()
                .map(|(name, outcome)| ((*name).to_owned(), *outcome))
                .collect(),
        }
    }

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn listed_failures_pass_and_a_failure_at_one_revision_keeps_its_entry() {
        let runs = [
            run("old", &[("a", Passed), ("both", Passed), ("gone", Skipped)]),
            run("new", &[("both", Failed), ("listed", Failed)]),
        ];
        let verdict = judge(&names(&["both", "listed"]), &runs);
        assert_eq!(verdict, Verdict::default());
        assert!(verdict.passed());
    }

    #[test]
    fn names_unlisted_failures_stale_entries_and_unknown_entries() {
        let runs = [
            run(
                "old",
                &[("a", Failed), ("fixed", Passed), ("skip", Skipped)],
            ),
            run("new", &[("a", Failed), ("fixed", Passed)]),
        ];
        let verdict = judge(&names(&["fixed", "skip", "typo"]), &runs);
        assert_eq!(
            verdict,
            Verdict {
                unexpected: vec![
                    ("old".to_owned(), "a".to_owned()),
                    ("new".to_owned(), "a".to_owned())
                ],
                stale: names(&["fixed"]),
                unknown: names(&["skip", "typo"]),
            }
        );
        assert!(!verdict.passed());
    }
}
