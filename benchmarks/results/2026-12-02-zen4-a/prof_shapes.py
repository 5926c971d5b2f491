"""The forty-eighth session's step profile (`2026-12-01-zen4-z/train_step_profile.py`) with shapes recorded: per shape,
then per operation. `python prof_shapes.py zhen-prenorm-bf16` from the repository root."""
original = open("benchmarks/results/2026-12-01-zen4-z/train_step_profile.py").read()
for old, new in [
    ("profile(activities=[ProfilerActivity.CPU])", "profile(activities=[ProfilerActivity.CPU], record_shapes=True)"),
    ("prof.key_averages()", "prof.key_averages(group_by_input_shape=True)"),
    ("row_limit=30, max_name_column_width=60", "row_limit=40, max_name_column_width=30, max_shapes_column_width=60"),
]:
    original = original.replace(old, new)
exec(original + "\nprint(prof.key_averages().table(sort_by='self_cpu_time_total', row_limit=45, max_name_column_width=45))\n")
