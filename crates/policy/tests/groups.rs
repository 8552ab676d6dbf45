//! Group tokens: a token repeated inside one group is a warning, in two
//! groups an error.

#![cfg(test)]

use crawlgate_policy::load;

const HEAD: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

#[test]
fn a_token_repeated_in_one_group_is_a_warning_and_renders_once() {
    let src = format!("{HEAD}\n[[group]]\nuser_agents = [\"GPTBot\", \"gptbot\"]\ndisallow = [\"/\"]\n");
    let loaded = load(&src, "t.toml").unwrap();
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        vec!["t.toml:5:26: warning[repeated-token]: group.user_agents: `gptbot` is listed twice in this group (tokens are case-insensitive); the repeat is ignored"]
    );
    assert_eq!(loaded.policy.robots_txt().matches("User-agent:").count(), 1);
}

#[test]
fn a_token_in_two_groups_is_an_error() {
    let src = format!("{HEAD}\n[[group]]\nuser_agents = [\"GPTBot\"]\n\n[[group]]\nuser_agents = [\"gptbot\"]\n");
    let err = load(&src, "t.toml").err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(err, "t.toml:8:16: group.user_agents: duplicate group for token `gptbot` (first at t.toml:5:16)");
}

/// A request naming no policy token gets the `*` group's verdict, but
/// whatever that group's `enforce`, it is neither blocked nor a violation;
/// a named crawler on the same path is.
#[test]
fn no_token_is_never_a_violation() {
    use crawlgate_policy::Action;
    for enforce in ["log", "block"] {
        let src = format!(
            "{HEAD}\n[[group]]\nuser_agents = [\"*\"]\ndisallow = [\"/private/\"]\nenforce = \"{enforce}\"\n\n\
             [[group]]\nuser_agents = [\"ExampleBot\"]\ndisallow = [\"/private/\"]\nenforce = \"{enforce}\"\n"
        );
        let l = load(&src, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let browser = l.policy.decide("Mozilla/5.0 Firefox/130.0", "/private/x");
        assert_eq!((browser.agent, browser.allowed, browser.action()), (None, false, Action::Pass), "{enforce}");
        let bot = l.policy.decide("ExampleBot/1.0", "/private/x");
        let want = if enforce == "log" { Action::LogViolation } else { Action::Block };
        assert_eq!((bot.agent, bot.allowed, bot.action()), (Some("ExampleBot"), false, want), "{enforce}");
    }
}
