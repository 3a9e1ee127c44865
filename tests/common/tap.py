"""TAP for the Python tests: ok() numbers and prints each check, done() prints the plan and
gives the exit status (1 when a check failed)."""


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what, detail=""):
        self.n += 1
        print(("ok %d - %s" if cond else "not ok %d - %s") % (self.n, what))
        if not cond:
            self.failed += 1
            if detail:
                print("# " + detail.replace("\n", "\n# "))
        return cond

    def done(self):
        print("1..%d" % self.n)
        return 1 if self.failed else 0
