"""``python -m newsquarry.search.cli``: the click commands in this process (no resident
searcher), as the tests and benchmarks run them."""

from newsquarry.search.cli.app import main

if __name__ == "__main__":
    main()
