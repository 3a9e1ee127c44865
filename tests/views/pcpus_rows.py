"""What test_pcpus.sh's checks share: intervals as pcpus rows make them."""


def merged(iv):
    """(start, end) pairs sorted, the ones that touch joined: [[s, e], ...]"""
    out = []
    for s, e in sorted(iv):
        if out and out[-1][1] == s:
            out[-1][1] = e
        else:
            out.append([s, e])
    return out
