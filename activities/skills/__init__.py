"""Skills on the worker: `turnkeeper.Skill`, the `TURNKEEPER_SKILLS_DIR` folder of `SKILL.md`
skills, the catalog a worker serves them from, the `describe_skills` activity and the built-in
tools `load_skill` and `read_skill_file`."""
