import typer

app = typer.Typer()

@app.command()
def plan() -> None:
    print("plan")

def main() -> None:
    app()
