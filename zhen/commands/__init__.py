# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
