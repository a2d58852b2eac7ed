//! Reads one run's result out of what the conformance suite prints on stdout in suite mode
//! (`client --suite ...`): `Running <selection> (N scenarios) in parallel...`, then after
//! `=== SUITE SUMMARY ===` one line per scenario (`✓ name: ...`, `✗ name: ...` or
//! `- name: skipped`) and a `Total:` line.
//!
//! A run whose output lacks any of these did not finish (the suite crashed), and that is an
//! error, not a result.

/// How one scenario went in one run. The suite marks a scenario `✗` if any of its checks is a
/// `FAILURE` or a `WARNING`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Passed,
    Failed,
    /// Not applicable at the run's revision.
    Skipped,
}

/// Every scenario of the run with its outcome, in the suite's order.
pub(super) fn read(stdout: &str) -> Result<Vec<(String, Outcome)>, String> {
    let announced = stdout
        .lines()
        .find_map(|line| line.strip_prefix("Running "))
        .and_then(|rest| rest.split_once(" ("))
        .and_then(|(_, rest)| rest.split_once(" scenarios)"))
        .and_then(|(count, _)| count.parse::<usize>().ok())
        .ok_or("the suite never said how many scenarios it runs")?;
    let (_, summary) = stdout
        .split_once("=== SUITE SUMMARY ===")
        .ok_or("the suite printed no summary")?;
    let (summary, _) = summary
        .split_once("\nTotal:")
        .ok_or("the suite's summary has no `Total:` line")?;
    let mut scenarios = Vec::new();
    for line in summary.lines() {
        let outcome = match line.split_once(' ') {
            Some(("✓", rest)) => rest
                .split_once(": ")
                .map(|(name, _)| (name, Outcome::Passed)),
            Some(("✗", rest)) => rest
                .split_once(": ")
                .map(|(name, _)| (name, Outcome::Failed)),
            Some(("-", rest)) => rest
                .strip_suffix(": skipped")
                .map(|name| (name, Outcome::Skipped)),
            _ => None,
        };
        scenarios.extend(outcome.map(|(name, outcome)| (name.to_owned(), outcome)));
    }
    if scenarios.len() != announced {
        return Err(format!(
            "the suite announced {announced} scenarios but summarised {}",
            scenarios.len()
        ));
    }
    Ok(scenarios)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "Running all suite (3 scenarios) in parallel...\n\n\n\
        === SUITE SUMMARY ===\n\n\
        ✓ initialize: 1 passed, 0 failed\n\
        ✗ auth/metadata-default: 0 passed, 7 failed\n\
        - sse-retry: skipped\n\n\
        Total: 1 passed, 7 failed, 0 warnings, 1 skipped\n";

    #[test]
    fn reads_every_scenario_s_outcome() {
        assert_eq!(
            read(RUN),
            Ok(vec![
                ("initialize".to_owned(), Outcome::Passed),
                ("auth/metadata-default".to_owned(), Outcome::Failed),
                ("sse-retry".to_owned(), Outcome::Skipped),
            ])
        );
        let warned = RUN.replace(
            "✓ initialize: 1 passed, 0 failed",
            "✗ initialize: 0 passed, 0 failed, 1 warnings",
        );
        assert_eq!(read(&warned).map(|run| run[0].1), Ok(Outcome::Failed));
    }

    #[test]
    fn lines_that_are_not_a_scenario_s_are_not_read() {
        // `--verbose` lists each failed check under its scenario.
        let verbose = RUN.replace("0 passed, 7 failed\n", "0 passed, 7 failed\n    - a: b\n\n");
        assert_eq!(read(&verbose), read(RUN));
    }

    #[test]
    fn an_unfinished_run_is_an_error() {
        let error = |text: &str| read(text).err().unwrap_or_default();
        assert_eq!(
            error(&RUN.replace("(3 scenarios)", "(4 scenarios)")),
            "the suite announced 4 scenarios but summarised 3"
        );
        assert_eq!(
            error(&RUN.replace("Running all", "Starting all")),
            "the suite never said how many scenarios it runs"
        );
        assert_eq!(
            error(&RUN.replace("=== SUITE SUMMARY ===", "")),
            "the suite printed no summary"
        );
        assert_eq!(
            error(&RUN.replace("Total:", "")),
            "the suite's summary has no `Total:` line"
        );
    }
}
