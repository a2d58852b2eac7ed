//! Judges the suite's runs together against the one baseline.
//!
//! A scenario that runs at both revisions may fail at only one of them, so it must be listed,
//! and judging each run alone would call the entry stale in the run where it passes. Across the
//! runs the rules stay whole:
//!
//! - a scenario that fails in any run and is not listed fails the command;
//! - a listed scenario that passes in every run that has it is stale and fails the command;
//! - a listed scenario that no run has is a typo or a leftover and fails the command.

use super::BASELINE_PATH;
use super::suite_output::Outcome;

/// What is wrong with `runs` (each a label and every scenario's outcome) given the `listed`
/// scenarios, one sentence each; empty when the command passes.
pub(super) fn judge(listed: &[String], runs: &[(&str, Vec<(String, Outcome)>)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (label, scenarios) in runs {
        for (scenario, outcome) in scenarios {
            if *outcome == Outcome::Failed && !listed.contains(scenario) {
                problems.push(format!(
                    "{scenario} failed at {label} and is not in {BASELINE_PATH}"
                ));
            }
        }
    }
    for scenario in listed {
        let outcomes = runs.iter().flat_map(|(_, scenarios)| scenarios);
        let ran: Vec<Outcome> = outcomes
            .filter(|(name, outcome)| name == scenario && *outcome != Outcome::Skipped)
            .map(|(_, outcome)| *outcome)
            .collect();
        if ran.is_empty() {
            problems.push(format!(
                "{BASELINE_PATH} lists {scenario}, which no run has"
            ));
        } else if ran.iter().all(|outcome| *outcome == Outcome::Passed) {
            problems.push(format!(
                "{scenario} passes in every run: remove it from {BASELINE_PATH}"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{Failed, Passed, Skipped};

    fn run<'a>(label: &'a str, scenarios: &[(&str, Outcome)]) -> (&'a str, Vec<(String, Outcome)>) {
        let scenarios = scenarios.iter().map(|(name, o)| ((*name).to_owned(), *o));
        (label, scenarios.collect())
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
        assert_eq!(
            judge(&names(&["both", "listed"]), &runs),
            Vec::<String>::new()
        );
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
        assert_eq!(
            judge(&names(&["fixed", "skip", "typo"]), &runs),
            [
                "a failed at old and is not in conformance/baseline.yaml",
                "a failed at new and is not in conformance/baseline.yaml",
                "fixed passes in every run: remove it from conformance/baseline.yaml",
                "conformance/baseline.yaml lists skip, which no run has",
                "conformance/baseline.yaml lists typo, which no run has",
            ]
        );
    }
}
